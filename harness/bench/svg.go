package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartWidth   = 960
	panelHeight  = 170
	panelGap     = 46
	marginLeft   = 64
	marginRight  = 70
	marginTop    = 40
	plotWidth    = chartWidth - marginLeft - marginRight
	minLatencyMS = 1.0
)

// WriteSVG draws commit-to-arrival latency over time, one panel per
// scenario that measured latency: p50, p99 and max per second on a log
// scale, with the deliveries of each second as grey bars behind them
// (right-hand scale).
func (r Report) WriteSVG(w io.Writer) error {
	var panels []Result
	for _, res := range r.Results {
		if res.Latency.Count > 0 && len(res.Series) > 0 {
			panels = append(panels, res)
		}
	}
	height := marginTop + len(panels)*(panelHeight+panelGap) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">Herald: commit-to-arrival latency per second (%s, %s)</text>`+"\n",
		marginLeft, html.EscapeString(r.Date.Format("2006-01-02")), html.EscapeString(r.Dispatcher))
	legend := []struct{ color, label string }{{"#1f77b4", "p50"}, {"#ff7f0e", "p99"}, {"#999999", "max"}, {"#dddddd", "delivered/s"}}
	for i, l := range legend {
		x := chartWidth - marginRight - 330 + i*85
		fmt.Fprintf(&b, `<rect x="%d" y="10" width="14" height="10" fill="%s"/><text x="%d" y="19">%s</text>`+"\n", x, l.color, x+18, l.label)
	}
	for i, res := range panels {
		drawPanel(&b, res, marginTop+i*(panelHeight+panelGap))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func drawPanel(b *strings.Builder, res Result, top int) {
	seconds := max(len(res.Series), 1)
	maxLatency, maxDelivered := minLatencyMS, 1
	for _, p := range res.Series {
		maxLatency = math.Max(maxLatency, p.Max)
		maxDelivered = max(maxDelivered, p.Delivered)
	}
	decades := max(int(math.Ceil(math.Log10(maxLatency/minLatencyMS))), 1)
	x := func(sec float64) float64 { return marginLeft + sec/float64(seconds)*plotWidth }
	y := func(ms float64) float64 {
		f := math.Log10(math.Max(ms, minLatencyMS)/minLatencyMS) / float64(decades)
		return float64(top+panelHeight) - f*panelHeight
	}
	yBar := func(n int) float64 { return float64(top+panelHeight) - float64(n)/float64(maxDelivered)*panelHeight }

	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text><text x="%d" y="%d" fill="#555">%s · p99 %.1f ms · %s delivered/s</text>`+"\n",
		marginLeft, top-8, html.EscapeString(res.Scenario), marginLeft+110, top-8, html.EscapeString(res.About), res.Latency.P99, count(int(res.DeliveredPerSecond)))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#ccc"/>`+"\n", marginLeft, top, plotWidth, panelHeight)

	barWidth := math.Max(float64(plotWidth)/float64(seconds)-1, 1)
	for _, p := range res.Series {
		if p.Delivered > 0 {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#dddddd"/>`+"\n",
				x(float64(p.Second)), yBar(p.Delivered), barWidth, float64(top+panelHeight)-yBar(p.Delivered))
		}
	}
	for d := 0; d <= decades; d++ {
		ms := minLatencyMS * math.Pow(10, float64(d))
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			marginLeft, marginLeft+plotWidth, y(ms), y(ms), marginLeft-6, y(ms)+4, msLabel(ms))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="start" fill="#888">%s/s</text><text x="%d" y="%d" text-anchor="start" fill="#888">0</text>`+"\n",
		marginLeft+plotWidth+6, top+10, count(maxDelivered), marginLeft+plotWidth+6, top+panelHeight)
	step := max(seconds/10, 1)
	for sec := 0; sec <= seconds; sec += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%ds</text>`+"\n", x(float64(sec)), top+panelHeight+14, sec)
	}
	for _, line := range []struct {
		color string
		width float64
		value func(Point) float64
	}{
		{"#999999", 1, func(p Point) float64 { return p.Max }},
		{"#ff7f0e", 1.6, func(p Point) float64 { return p.P99 }},
		{"#1f77b4", 1.6, func(p Point) float64 { return p.P50 }},
	} {
		var points []string
		for _, p := range res.Series {
			if v := line.value(p); v > 0 {
				points = append(points, fmt.Sprintf("%.1f,%.1f", x(float64(p.Second)+0.5), y(v)))
			}
		}
		if len(points) > 0 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"/>`+"\n", line.color, line.width, strings.Join(points, " "))
		}
	}
}

func msLabel(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%gs", ms/1000)
	}
	return fmt.Sprintf("%gms", ms)
}
