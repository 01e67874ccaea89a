package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// Layout of the jitter histogram, in SVG user units.
const (
	svgWidth       = 960
	svgPanelHeight = 140
	svgPanelGap    = 46
	svgLeft        = 56
	svgRight       = 16
	svgTop         = 44
	svgBottom      = 36
)

// WriteJitterSVG draws the jitter table as one histogram per strategy:
// attempts arriving in each second, on a shared time axis and a log scale,
// with the moment the receiver came back marked.
func WriteJitterSVG(w io.Writer, rows []JitterRow) error {
	seconds := 0
	peak := 1
	for _, r := range rows {
		seconds = max(seconds, len(r.PerSecond))
		for _, n := range r.PerSecond {
			peak = max(peak, n)
		}
	}
	step := 300
	if seconds > 3600 {
		step = 600
	}
	seconds = (seconds + step - 1) / step * step
	top := math.Pow(10, math.Ceil(math.Log10(float64(peak))))
	plotW := float64(svgWidth - svgLeft - svgRight)
	height := svgTop + len(rows)*(svgPanelHeight+svgPanelGap) - svgPanelGap + svgBottom
	x := func(sec float64) float64 { return svgLeft + sec*plotW/float64(seconds) }
	scale := func(n float64) float64 { return math.Log10(1+n) / math.Log10(1+top) }
	barWidth := max(1, plotW/float64(seconds))

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="20" font-size="14" font-weight="bold">Retry attempts per second: %d deliveries failing from t=0, receiver back at t=%d s (log scale)</text>`+"\n",
		svgLeft, deliveriesOf(rows), int(recovery/time.Second))
	for i, r := range rows {
		y0 := float64(svgTop + i*(svgPanelHeight+svgPanelGap))
		base := y0 + svgPanelHeight
		fmt.Fprintf(b, `<text x="%d" y="%.0f" font-weight="bold">%s</text>`+"\n", svgLeft, y0-6,
			html.EscapeString(fmt.Sprintf("%s: %d attempts, peak after recovery %d/s, last delivered at t=%d s",
				r.Name, r.Attempts, r.PeakAfterRecovery, r.LastDelivered.Round(time.Second)/time.Second)))
		for n := 1.0; n <= top; n *= 10 {
			y := base - scale(n)*svgPanelHeight
			fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", svgLeft, svgWidth-svgRight, y, y)
			fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%.0f</text>`+"\n", svgLeft-6, y+4, n)
		}
		var path strings.Builder
		for sec, n := range r.PerSecond {
			if n == 0 {
				continue
			}
			fmt.Fprintf(&path, "M%.1f %.1fV%.1f", x(float64(sec)+0.5), base, base-scale(float64(n))*svgPanelHeight)
		}
		fmt.Fprintf(b, `<path d="%s" stroke="#2563eb" stroke-width="%.2f"/>`+"\n", path.String(), barWidth)
		rx := x(float64(recovery / time.Second))
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#dc2626" stroke-dasharray="4 3"/>`+"\n", rx, rx, y0, base)
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.0f" y2="%.0f" stroke="#333"/>`+"\n", svgLeft, svgWidth-svgRight, base, base)
		for sec := 0; sec <= seconds; sec += step {
			fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%d</text>`+"\n", x(float64(sec)), base+14, sec)
		}
		if i == 0 {
			fmt.Fprintf(b, `<text x="%.1f" y="%.0f" fill="#dc2626">receiver back</text>`+"\n", rx+4, y0+12)
		}
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%d" text-anchor="middle">seconds since the first attempt</text>`+"\n", svgLeft+plotW/2, height-6)
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
}

func deliveriesOf(rows []JitterRow) int {
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Deliveries
}
