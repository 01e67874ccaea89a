package portal

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDayChartHasOneBarPerHourEndingNow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 14, 35, 0, 0, time.UTC)
	counts := []hourCount{
		{Hour: time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC), Succeeded: 3, Failed: 1},
		{Hour: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), Succeeded: 2},
		{Hour: time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC), Succeeded: 100}, // 24 h + ago: outside
	}
	c := dayChart(counts, now)
	require.Len(t, c.Bars, 24)
	require.Contains(t, c.Bars[0].Label, "Dec 1 15:00–16:00 UTC: 2 succeeded, 0 failed")
	require.Contains(t, c.Bars[23].Label, "Dec 2 14:00–15:00 UTC: 3 succeeded, 1 failed")
	require.Equal(t, "Last 24 hours: 5 succeeded, 1 failed; bars reach 4 at the top line.", c.Summary)
	require.NotEmpty(t, c.Bars[23].FailH)
	require.Empty(t, c.Bars[0].FailH, "no failed rect when nothing failed")
	require.Empty(t, c.Bars[5].OkH, "no rect for an empty hour")
	for _, tk := range c.Ticks {
		require.Contains(t, []string{"18:00", "00:00", "06:00", "12:00"}, tk.Label)
	}
}

func TestBarsStackWithinThePlot(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 14, 35, 0, 0, time.UTC)
	c := dayChart([]hourCount{{Hour: now.Truncate(time.Hour), Succeeded: 6, Failed: 3}}, now)
	b := c.Bars[23]
	f := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		return v
	}
	plot := float64(c.PlotHeight)
	require.InDelta(t, plot, f(b.OkY)+f(b.OkH), 0.11, "succeeded sits on the axis")
	require.InDelta(t, f(b.OkY), f(b.FailY)+f(b.FailH), 0.11, "failed sits on succeeded")
	require.InDelta(t, plot*0.9, f(b.OkH)+f(b.FailH), 0.2, "9 of a scale of 10")
	require.GreaterOrEqual(t, f(b.FailY), 0.0)
}

func TestWeekChartSumsHoursIntoUTCDays(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 14, 35, 0, 0, time.UTC) // a Wednesday
	counts := []hourCount{
		{Hour: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC), Failed: 2},
		{Hour: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), Failed: 3},
		{Hour: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), Succeeded: 7},
		{Hour: time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC), Succeeded: 9}, // before the week
	}
	c := weekChart(counts, now)
	require.Len(t, c.Bars, 7)
	require.Len(t, c.Ticks, 7)
	require.Equal(t, "Thu 26", c.Ticks[0].Label)
	require.Equal(t, "Wed 2", c.Ticks[6].Label)
	require.Contains(t, c.Bars[0].Label, "7 succeeded, 0 failed")
	require.Contains(t, c.Bars[6].Label, "0 succeeded, 5 failed")
	require.Contains(t, c.Summary, "Failing without a success since Wed 2 Dec (UTC).")
}

func TestFailingSinceFindsWhenTheTrailingFailuresBegan(t *testing.T) {
	t.Parallel()
	b := func(ok, failed int) bucket { return bucket{Succeeded: ok, Failed: failed} }
	cases := []struct {
		name    string
		buckets []bucket
		want    int // index, or -1 for not failing
	}{
		{"no attempts", []bucket{b(0, 0), b(0, 0)}, -1},
		{"healthy", []bucket{b(1, 0), b(0, 1), b(2, 0)}, -1},
		{"recovered in the last active bucket", []bucket{b(0, 3), b(1, 1), b(0, 0)}, -1},
		{"failing after quiet hours", []bucket{b(2, 0), b(0, 1), b(0, 0), b(0, 2), b(0, 0)}, 1},
		{"failing from the start", []bucket{b(0, 1), b(0, 1)}, 0},
	}
	for _, tc := range cases {
		got, ok := failingSince(tc.buckets)
		if tc.want < 0 {
			require.False(t, ok, tc.name)
			continue
		}
		require.True(t, ok, tc.name)
		require.Equal(t, tc.buckets[tc.want], got, tc.name)
	}
}

func TestNiceCeiling(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{0: 2, 1: 2, 2: 2, 3: 4, 7: 8, 10: 10, 11: 20, 45: 60, 101: 200, 999: 1000} {
		require.Equal(t, want, niceCeiling(n), "peak %d", n)
	}
}
