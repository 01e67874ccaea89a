package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/retention"
)

// The endpoint list's last 24 hours and the endpoint page's charts count
// attempts from the counts kept per hour as attempts are recorded
// (migration 0051), not attempt by attempt: the same before and after the
// retention pass moves the deltas into their hours, old hours pruned, and,
// on a database upgraded with history, the attempts of the hours before
// counting began counted from the attempts, each attempt once (issue 16).
func TestEndpointCountsComeFromHourlyCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := b.pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	requireCounts := func(why string, ok, failed int) {
		t.Helper()
		list := br.get("/portal/endpoints")
		require.Equal(t, http.StatusOK, list.StatusCode, list.body)
		require.Contains(t, list.body, fmt.Sprintf(`%d ok</span> · <span class="fail-count" title="failed attempts">%d failed`, ok, failed), why)
		page := br.get("/portal/endpoints/" + f.endpoint.String())
		require.Equal(t, http.StatusOK, page.StatusCode, page.body)
		require.Contains(t, page.body, fmt.Sprintf("Last 24 hours: %d succeeded, %d failed", ok, failed), why)
		require.Contains(t, page.body, fmt.Sprintf("Last 7 days: %d succeeded, %d failed", ok, failed), why)
	}

	requireCounts("the fixture's two attempts", 1, 1)

	hour := time.Now().UTC().Truncate(time.Hour)
	exec(`INSERT INTO herald.endpoint_outcome_deltas (endpoint_id, hour, succeeded, failed)
	      VALUES ($1, $2, 3, 1), ($1, $2, 2, 0), ($1, $3, 0, 2)`, f.endpoint, hour, hour.Add(-2*time.Hour))
	requireCounts("and the deltas of three more recordings", 6, 4)

	m, err := retention.New(retention.Config{Pool: b.pool})
	require.NoError(t, err)
	exec(`INSERT INTO herald.endpoint_outcomes (endpoint_id, hour, succeeded, failed) VALUES ($1, $2, 7, 7)`,
		f.endpoint, hour.Add(-retention.KeptOutcomes-time.Hour))
	var deltas, hours int
	count := func() {
		t.Helper()
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM herald.endpoint_outcome_deltas),
		      (SELECT count(DISTINCT hour) FROM herald.endpoint_outcome_deltas)`).Scan(&deltas, &hours))
	}
	count()
	rep, err := m.Pass(ctx)
	require.NoError(t, err)
	require.EqualValues(t, deltas, rep.RolledUpOutcomes, "every delta")
	require.EqualValues(t, 1, rep.PrunedOutcomeHours, "the hour older than KeptOutcomes")
	var rows int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.endpoint_outcomes`).Scan(&rows))
	require.Equal(t, hours, rows, "one row per hour")
	count()
	require.Zero(t, deltas, "the pass moved every delta")
	requireCounts("after the pass, in their hours", 6, 4)

	// An upgraded database counts from the hour after its migration; the
	// attempts before it are counted one by one, and the counts of those
	// hours are not counted again.
	exec(`UPDATE herald.endpoint_outcomes_since SET at = $1`, hour.Add(time.Hour))
	requireCounts("the fixture's attempts, before counting began", 1, 1)
}
