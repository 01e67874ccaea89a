package delivery_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// Successes that arrive together are recorded together; each must still be
// recorded exactly once, with its own attempt row, and its endpoint's health
// must hear of it.
func TestWorkerRecordsConcurrentSuccessesOnce(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	var endpoints []uuid.UUID
	for range 3 {
		endpoints = append(endpoints, b.endpoint(t, ctx, webhooktest.NewReceiver(t, webhooktest.Status(200)).URL))
	}
	var ids []uuid.UUID
	for i := range 60 {
		ids = append(ids, b.enqueue(t, ctx, b.message(t, ctx), endpoints[i%len(endpoints)]))
	}
	for _, id := range ids {
		d := b.waitStatus(t, ctx, id, "succeeded")
		require.Equal(t, 1, d.AttemptCount)
		require.Equal(t, 200, *d.LastStatusCode)
		require.NotNil(t, d.CompletedAt)
		attempts := b.attempts(t, ctx, id)
		require.Len(t, attempts, 1, "delivery %s", id)
		require.Equal(t, 1, attempts[0].Number)
		require.Equal(t, "succeeded", attempts[0].Outcome)
		require.Equal(t, *d.FirstAttemptAt, attempts[0].StartedAt)
		require.Equal(t, "msg_", attempts[0].RequestHeaders["webhook-id"][:4], "the request headers are stored")
	}
	for _, id := range endpoints {
		var lastSuccess *time.Time
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT last_success_at FROM herald.endpoints WHERE id = $1", id).Scan(&lastSuccess))
		require.NotNil(t, lastSuccess, "endpoint %s heard of its successes", id)
	}
}
