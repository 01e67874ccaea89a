package chaos

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
)

// A run that cannot account for a request names its delivery's jobs, with
// their state, runs (every client that ran them) and errors, so that the
// failure can be looked into after the run's databases are gone.
func TestDescribeJobsOfUnaccountedRequests(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t, pgtest.Herald))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	d := testfactory.Delivery(t, pool, nil)
	_, err = pool.Exec(ctx, `INSERT INTO herald.river_job (kind, args, state, attempt, max_attempts, attempted_at, attempted_by, errors, finalized_at)
VALUES ($1, jsonb_build_object('delivery_ids', jsonb_build_array($3::text)), 'running', 2, 25, now(), '{dispatcher-1,dispatcher-0}',
        ARRAY[jsonb_build_object('at', now() - interval '5 seconds', 'attempt', 1, 'error', 'record 7 attempts: conn closed')], NULL),
       ($2, jsonb_build_object('delivery_id', $3::text), 'completed', 1, 25, now(), '{dispatcher-1}', '{}', now())`,
		delivery.BatchKind, delivery.Kind, d.ID)
	require.NoError(t, err)

	var r Report
	require.NoError(t, describeJobs(ctx, &r, pool, []string{delivery.MessageHeaderID(d.MessageID)}))
	require.Len(t, r.Problems, 1)
	got := r.Problems[0]
	t.Log(got)
	for _, want := range []string{
		delivery.MessageHeaderID(d.MessageID),
		"(" + delivery.BatchKind + ") running, attempt 2",
		"by [dispatcher-1, dispatcher-0]",
		"record 7 attempts: conn closed",
		"(" + delivery.Kind + ") completed, attempt 1",
	} {
		require.True(t, strings.Contains(got, want), "want %q in %q", want, got)
	}
}
