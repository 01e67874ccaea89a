package receiver_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/receiver"
)

// age moves an inbox event's receipt (and processing, if any) into the past.
func (b *testBundle) age(t *testing.T, webhookID string, by time.Duration) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, `UPDATE webhook_inbox.events
SET received_at = received_at - make_interval(secs => $2),
    processed_at = processed_at - make_interval(secs => $2)
WHERE webhook_id = $1`, webhookID, by.Seconds())
	require.NoError(t, err)
}

func (b *testBundle) inboxKeys(t *testing.T) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT webhook_id FROM webhook_inbox.events ORDER BY webhook_id`)
	require.NoError(t, err)
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return keys
}

func TestPrune(t *testing.T) {
	t.Parallel()

	const day = 24 * time.Hour

	// Processed events of 6, 29 and 31 days ago, an unprocessed one and a
	// dead letter of 40 days ago.
	seed := func(t *testing.T, bundle *testBundle) {
		t.Helper()
		for _, id := range []string{"msg_6d", "msg_29d", "msg_31d", "msg_dead_40d", "msg_pending_40d"} {
			bundle.storeEvent(t, "acme", id, "account.credited", creditData{Account: "acct_1", Amount: 1})
		}
		_, err := bundle.pool.Exec(bundle.ctx, `UPDATE webhook_inbox.events SET processed_at = now() WHERE webhook_id IN ('msg_6d', 'msg_29d', 'msg_31d')`)
		require.NoError(t, err)
		_, err = bundle.pool.Exec(bundle.ctx, `UPDATE webhook_inbox.events SET dead_at = now(), attempts = 5 WHERE webhook_id = 'msg_dead_40d'`)
		require.NoError(t, err)
		bundle.age(t, "msg_6d", 6*day)
		bundle.age(t, "msg_29d", 29*day)
		bundle.age(t, "msg_31d", 31*day)
		bundle.age(t, "msg_dead_40d", 40*day)
		bundle.age(t, "msg_pending_40d", 40*day)
	}

	t.Run("KeepsKeysForTheRetentionAndPrunesOnlyOlderProcessedOnes", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		seed(t, bundle)

		deleted, err := receiver.Prune(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)
		require.EqualValues(t, 1, deleted)
		require.Equal(t, []string{"msg_29d", "msg_6d", "msg_dead_40d", "msg_pending_40d"}, bundle.inboxKeys(t))

		deleted, err = receiver.Prune(bundle.ctx, bundle.pool, 7*day)
		require.NoError(t, err)
		require.EqualValues(t, 1, deleted)
		require.Equal(t, []string{"msg_6d", "msg_dead_40d", "msg_pending_40d"}, bundle.inboxKeys(t))
	})

	t.Run("PrunesClaimKeys", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for _, id := range []string{"msg_new", "msg_old"} {
			require.NoError(t, pgx.BeginFunc(bundle.ctx, bundle.pool, func(tx pgx.Tx) error {
				_, err := receiver.Claim(bundle.ctx, tx, "acme", id)
				return err
			}))
		}
		_, err := bundle.pool.Exec(bundle.ctx, `UPDATE webhook_inbox.claims SET claimed_at = now() - interval '31 days' WHERE webhook_id = 'msg_old'`)
		require.NoError(t, err)

		deleted, err := receiver.Prune(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)
		require.EqualValues(t, 1, deleted)
		require.NoError(t, pgx.BeginFunc(bundle.ctx, bundle.pool, func(tx pgx.Tx) error {
			first, err := receiver.Claim(bundle.ctx, tx, "acme", "msg_new")
			require.False(t, first, "a key inside the retention still dedupes")
			return err
		}))
	})

	t.Run("RefusesShortRetention", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		seed(t, bundle)

		for _, retention := range []time.Duration{5 * time.Minute, 24 * time.Hour, 7*day - time.Second, -day} {
			_, err := receiver.Prune(bundle.ctx, bundle.pool, retention)
			require.ErrorIs(t, err, receiver.ErrRetentionTooShort, "retention %s", retention)
			require.ErrorContains(t, err, "manual resends")
		}
		require.Len(t, bundle.inboxKeys(t), 5, "a refused prune deletes nothing")
	})

	t.Run("WorkerPrunesOnItsInterval", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		seed(t, bundle)
		w := newWorker(t, bundle, func(context.Context, pgx.Tx, receiver.Event) error { return nil },
			receiver.WorkerConfig{Retention: 7 * day, PruneInterval: 20 * time.Millisecond, PollInterval: time.Hour})
		ctx, cancel := context.WithCancel(bundle.ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()

		// The worker also processes the pending event, which was received
		// 40 days ago; pruning then removes it with the two older processed
		// ones, and keeps the recent one and the dead letter.
		require.Eventually(t, func() bool { return len(bundle.inboxKeys(t)) == 2 }, 30*time.Second, 20*time.Millisecond)
		cancel()
		require.NoError(t, <-done)
		require.Equal(t, []string{"msg_6d", "msg_dead_40d"}, bundle.inboxKeys(t))
	})
}
