package portal

import (
	"fmt"
	"time"
)

// hourCount is one hour's attempts to an endpoint, by outcome.
type hourCount struct {
	Hour      time.Time
	Succeeded int
	Failed    int
}

// chart is a stacked bar chart of attempt outcomes, drawn as inline SVG by
// the "chart" template. Geometry is computed here, in viewBox units, so the
// template only places shapes and the stylesheet colours them.
type chart struct {
	ID         string
	Title      string
	Summary    string
	Width      int
	Height     int
	PlotHeight int
	Bars       []bar
	Grid       []gridLine
	Ticks      []tick
}

type bar struct {
	X, W         string
	OkY, OkH     string
	FailY, FailH string
	// Label is the bar's tooltip and accessible name.
	Label string
}

type gridLine struct{ Y string }

type tick struct {
	X      string
	Label  string
	Anchor string
}

// bucket is one bar's span and counts.
type bucket struct {
	Start     time.Time
	Succeeded int
	Failed    int
}

const (
	chartWidth  = 480
	chartHeight = 150
	chartPad    = 14 // room for the first and last tick labels
	tickSpace   = 18 // below the plot, for tick labels
)

// dayChart shows the 24 hours up to now, one bar per hour (UTC).
func dayChart(counts []hourCount, now time.Time) chart {
	start := now.UTC().Truncate(time.Hour).Add(-23 * time.Hour)
	buckets := fill(counts, start, time.Hour, 24)
	return build("chart-day", "Last 24 hours", buckets, time.Hour, func(b bucket) string {
		if b.Start.Hour()%6 != 0 {
			return ""
		}
		return b.Start.Format("15:04")
	})
}

// weekChart shows the last 7 days including today, one bar per UTC day.
func weekChart(counts []hourCount, now time.Time) chart {
	start := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -6)
	buckets := fill(counts, start, 24*time.Hour, 7)
	return build("chart-week", "Last 7 days", buckets, 24*time.Hour, func(b bucket) string {
		return b.Start.Format("Mon 2")
	})
}

// fill sums hourly counts into n buckets of width step from start; counts
// outside the range are ignored.
func fill(counts []hourCount, start time.Time, step time.Duration, n int) []bucket {
	buckets := make([]bucket, n)
	for i := range buckets {
		buckets[i].Start = start.Add(time.Duration(i) * step)
	}
	for _, c := range counts {
		i := int(c.Hour.UTC().Sub(start) / step)
		if c.Hour.Before(start) || i >= n {
			continue
		}
		buckets[i].Succeeded += c.Succeeded
		buckets[i].Failed += c.Failed
	}
	return buckets
}

func build(id, title string, buckets []bucket, step time.Duration, tickLabel func(bucket) string) chart {
	c := chart{ID: id, Title: title, Width: chartWidth, Height: chartHeight, PlotHeight: chartHeight - tickSpace}
	peak := 0
	var ok, failed int
	for _, b := range buckets {
		peak = max(peak, b.Succeeded+b.Failed)
		ok += b.Succeeded
		failed += b.Failed
	}
	scale := niceCeiling(peak)
	plot := float64(c.PlotHeight)
	slot := float64(chartWidth-2*chartPad) / float64(len(buckets))
	for i, b := range buckets {
		x := chartPad + float64(i)*slot
		okH := plot * float64(b.Succeeded) / float64(scale)
		failH := plot * float64(b.Failed) / float64(scale)
		c.Bars = append(c.Bars, bar{
			X: num(x + slot*0.12), W: num(slot * 0.76),
			OkY: num(plot - okH), OkH: nonZero(okH),
			FailY: num(plot - okH - failH), FailH: nonZero(failH),
			Label: fmt.Sprintf("%s: %d succeeded, %d failed", spanLabel(b.Start, step), b.Succeeded, b.Failed),
		})
		if label := tickLabel(b); label != "" {
			c.Ticks = append(c.Ticks, tick{X: num(x + slot/2), Label: label, Anchor: "middle"})
		}
	}
	for _, frac := range []float64{0.5, 1} {
		c.Grid = append(c.Grid, gridLine{Y: num(plot - plot*frac)})
	}
	c.Summary = fmt.Sprintf("%s: %d succeeded, %d failed; bars reach %d at the top line.", title, ok, failed, scale)
	if since, ok := failingSince(buckets); ok {
		c.Summary += " Failing without a success since " + spanLabel(since.Start, step) + "."
	}
	return c
}

// failingSince finds the start of the trailing run of buckets that had
// failures and no success, looking back from the last bucket with attempts:
// when the endpoint started failing.
func failingSince(buckets []bucket) (bucket, bool) {
	last := -1
	for i := len(buckets) - 1; i >= 0; i-- {
		if buckets[i].Succeeded+buckets[i].Failed > 0 {
			last = i
			break
		}
	}
	if last < 0 || buckets[last].Succeeded > 0 {
		return bucket{}, false
	}
	first := last
	for i := last - 1; i >= 0; i-- {
		if buckets[i].Succeeded > 0 {
			break
		}
		if buckets[i].Failed > 0 {
			first = i
		}
	}
	return buckets[first], true
}

func spanLabel(start time.Time, step time.Duration) string {
	if step >= 24*time.Hour {
		return start.Format("Mon 2 Jan") + " (UTC)"
	}
	return start.Format("Jan 2 15:04") + "–" + start.Add(step).Format("15:04") + " UTC"
}

// niceCeiling rounds a peak up to 2, 4, 6, 8 or 10 times a power of ten,
// so the half-way grid line lands on a whole number; never below 2.
func niceCeiling(n int) int {
	for pow := 1; ; pow *= 10 {
		for _, m := range []int{2, 4, 6, 8, 10} {
			if m*pow >= n {
				return m * pow
			}
		}
	}
}

func num(f float64) string { return fmt.Sprintf("%.1f", f) }

// nonZero formats a bar height, or "" for none, so the template skips the
// rect.
func nonZero(f float64) string {
	if f <= 0 {
		return ""
	}
	return num(max(f, 1))
}
