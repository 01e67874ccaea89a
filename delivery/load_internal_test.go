package delivery

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
)

// Loading deliveries sets its planner settings for the one round trip
// that loads them, outside any transaction block. Written as SET LOCAL,
// Postgres applied them but warned on each ("SET LOCAL can only be used
// in transaction blocks"): three WARNING lines in the server's log per
// load, 12,258 in ten minutes of the aged benchmark.
func TestLoadingWarnsNothing(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t, pgtest.Herald))
	require.NoError(t, err)
	var (
		mu      sync.Mutex
		notices []string
	)
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n.Severity+": "+n.Message)
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	w, err := NewWorker(Config{DB: pool, Secrets: &countingSecrets{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	endpoint := testfactory.Endpoint(t, pool, nil)
	var ids []uuid.UUID
	for range 2 {
		ids = append(ids, testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{EndpointID: endpoint.ID}).ID)
	}

	found, err := w.loadMany(t.Context(), ids)
	require.NoError(t, err)
	require.Len(t, found, 2)
	require.NotNil(t, found[0])
	mu.Lock()
	require.Empty(t, notices)
	mu.Unlock()

	// The settings hold for the rest of the round trip, and no longer.
	var batch pgx.Batch
	var during, after string
	batch.Queue(lookUpByIndex)
	batch.Queue("SHOW enable_seqscan").QueryRow(func(row pgx.Row) error { return row.Scan(&during) })
	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	require.NoError(t, conn.SendBatch(t.Context(), &batch).Close())
	require.NoError(t, conn.QueryRow(t.Context(), "SHOW enable_seqscan").Scan(&after))
	require.Equal(t, []string{"off", "on"}, []string{during, after})
}
