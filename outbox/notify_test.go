package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/outbox"
)

// A committed publish notifies NotifyChannel; a rolled-back one does not.
// Notifications arrive in commit order, so a marker sent after the rollback
// is the first thing a listener receives if the rollback sent nothing.
func TestPublishNotifiesAtCommit(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	listener, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer listener.Release()
	_, err = listener.Exec(ctx, "LISTEN "+outbox.NotifyChannel)
	require.NoError(t, err)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = outbox.Publish(ctx, tx, invoicePaid("inv_1"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	_, err = b.pool.Exec(ctx, "SELECT pg_notify($1, 'marker')", outbox.NotifyChannel)
	require.NoError(t, err)

	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := listener.Conn().WaitForNotification(waitCtx)
	require.NoError(t, err)
	require.Equal(t, "marker", n.Payload, "a rolled-back publish must not notify")

	tx, err = b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = outbox.Publish(ctx, tx, invoicePaid("inv_1"))
	require.NoError(t, err)
	_, err = outbox.Publish(ctx, tx, invoicePaid("inv_2"))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	n, err = listener.Conn().WaitForNotification(waitCtx)
	require.NoError(t, err)
	require.Equal(t, outbox.NotifyChannel, n.Channel)
	require.Empty(t, n.Payload)
}
