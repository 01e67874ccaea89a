package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The retention replay is pure arithmetic over keyed draws, so with the
// article's seed it gives the article's table exactly.
func TestRetentionReproducesArticle(t *testing.T) {
	t.Parallel()

	rows := Retention(Article())
	require.Len(t, rows, 4)
	want := map[string]struct {
		through []int
		last    string
	}{
		"Svix published schedule":              {[]int{268, 4, 0, 0}, "27:35:05"},
		"Standard Webhooks example":            {[]int{247, 14, 0, 0}, "75:35:05"},
		"3-day window, illustrative intervals": {[]int{325, 48, 28, 0}, "72:00:00"},
	}
	for _, row := range rows[:3] {
		w, ok := want[row.Schedule]
		require.True(t, ok, row.Schedule)
		require.Equal(t, w.through, row.Through, row.Schedule)
		require.Equal(t, w.last, row.LastRetry, row.Schedule)
	}
	require.Equal(t, "Herald schedule.Default()", rows[3].Schedule)
}

// Keys kept 30 days outlive every automatic retry and every manual resend
// of every schedule, Herald's included; keys kept 5 minutes do not.
func TestRetentionThirtyDaysLetsNothingThrough(t *testing.T) {
	t.Parallel()

	for _, row := range Retention(Small()) {
		require.Equal(t, "30 days", Retentions[3].Name)
		require.Zero(t, row.Through[3], "%s with 30-day keys", row.Schedule)
		require.Positive(t, row.Through[0], "%s with 5-minute keys", row.Schedule)
	}
}

func TestProcessedCountsCopiesAfterExpiry(t *testing.T) {
	t.Parallel()

	m := time.Minute
	arrivals := []time.Duration{0, 1 * m, 6 * m, 7 * m, 20 * m}
	require.Equal(t, 3, processed(arrivals, 5*m), "0 holds the key until 5m; 6m is processed again and holds it until 11m; 20m again")
	require.Equal(t, 1, processed(arrivals, 30*m))
	require.Zero(t, processed(nil, m))
}
