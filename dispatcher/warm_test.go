package dispatcher_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
)

// A dispatcher that shares its pool with the application embedding it warms
// only the connections it can take without waiting. One held in a
// transaction elsewhere held its start up for the whole warm-up timeout (30
// s), with every other connection of the pool taken, and the application's
// transaction, which needed one of them, sat idle until Postgres ended it
// (health's TestDeadEndpointIsDisabledAndReplayedAfterReEnabling).
func TestWarmingWaitsForNoConnectionHeldElsewhere(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	pool := b.openPool(t, 3)
	held, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(context.Background()) }()
	d, err := dispatcher.New(dispatcher.Config{Pool: pool, Delivery: delivery.Config{Secrets: b.store}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	select {
	case <-d.Ready():
	case <-time.After(10 * time.Second):
		t.Error("not ready while a connection of its pool was held elsewhere")
	}
	var one int
	require.NoError(t, held.QueryRow(ctx, `SELECT 1`).Scan(&one), "the transaction held elsewhere goes on")
	stop()
	require.NoError(t, <-done)
}
