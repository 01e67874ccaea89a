package delivery

import (
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/historyplan"
	"github.com/heraldhq/herald/internal/testfactory"
)

// Warm leaves on its connection the generic plans of the load and of a
// batch's recording, which the worker's own runs on that connection then
// use without planning again, and writes nothing.
func TestWarmPlansTheLoadAndTheRecording(t *testing.T) {
	t.Parallel()
	pool, _ := historyplan.NewPool(t)
	w, err := NewWorker(Config{DB: pool, Secrets: &countingSecrets{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	var attemptsBefore int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM herald.attempts`).Scan(&attemptsBefore))

	require.NoError(t, w.Warm(t.Context(), conn.Conn()))
	plans := func() map[string]int {
		rows, err := conn.Query(t.Context(), `SELECT statement, generic_plans FROM pg_prepared_statements`)
		require.NoError(t, err)
		defer rows.Close()
		got := map[string]int{}
		for rows.Next() {
			var (
				statement string
				generic   int
			)
			require.NoError(t, rows.Scan(&statement, &generic))
			got[statement] = generic
		}
		require.NoError(t, rows.Err())
		return got
	}
	warmed := plans()
	require.Equal(t, 1, warmed[loadDeliveries], "the load's generic plan")
	require.Equal(t, 1, warmed[recordAttempts], "the recording's generic plan")
	var attempts int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM herald.attempts`).Scan(&attempts))
	require.Equal(t, attemptsBefore, attempts, "Warm wrote nothing")

	// The worker's load on that connection runs the same prepared
	// statement, whose generic plan Postgres keeps (generic_plans counts
	// its uses): no statement prepared anew.
	endpoint := testfactory.Endpoint(t, pool, nil)
	id := testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{EndpointID: endpoint.ID}).ID
	w.db = conn
	found, err := w.loadMany(t.Context(), []uuid.UUID{id})
	require.NoError(t, err)
	require.NotNil(t, found[0])
	after := plans()
	require.Equal(t, 2, after[loadDeliveries])
	require.Len(t, after, len(warmed))
}
