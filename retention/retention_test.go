package retention_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/retention"
)

// idAt is a UUIDv7 of the millisecond at.
func idAt(t *testing.T, at time.Time) uuid.UUID {
	u := uuid.Must(uuid.NewV7())
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(at.UnixMilli()))
	copy(u[:6], ms[2:])
	return u
}

type testBundle struct {
	pool *pgxpool.Pool
	// past is a minute whose partitions exist, two hours ago.
	past time.Time
	// current runs passes now with a retention of an hour: past is due.
	current *retention.Maintainer
}

func setup(t *testing.T) testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	// The migration's daily partitions are empty; minute ones replace them.
	_, err := pool.Exec(t.Context(), `SELECT herald.drop_empty_history_partitions(suffix) FROM herald.history_partitions`)
	require.NoError(t, err)
	past := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	early, err := retention.New(retention.Config{Pool: pool, Interval: time.Minute, Now: func() time.Time { return past }})
	require.NoError(t, err)
	rep, err := early.Pass(t.Context())
	require.NoError(t, err)
	require.Contains(t, rep.Created, past.UTC().Format("20060102_150405"))
	current, err := retention.New(retention.Config{Pool: pool, Interval: time.Minute, Retention: time.Hour, LockTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	return testBundle{pool: pool, past: past, current: current}
}

func (b testBundle) suffix() string { return b.past.UTC().Format("20060102_150405") }

func (b testBundle) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), "SELECT count(*) FROM herald."+table).Scan(&n))
	return n
}

func (b testBundle) partitionExists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, b.pool.QueryRow(t.Context(), "SELECT to_regclass('herald.' || $1) IS NOT NULL", name).Scan(&ok))
	return ok
}

func TestPassCreatesPartitionsAheadAndDropsSettledOnesPastRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	endpoint := testfactory.Endpoint(t, b.pool, nil)
	done := b.past.Add(time.Second)
	msg := testfactory.Message(t, b.pool, &testfactory.MessageOpts{ID: idAt(t, b.past.Add(10*time.Second)), TenantID: endpoint.TenantID, DispatchedAt: &done})
	testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: msg.ID, EndpointID: endpoint.ID, Status: deliverystatus.Succeeded, CompletedAt: &done})
	require.True(t, b.partitionExists(t, "deliveries_p"+b.suffix()))
	require.Equal(t, 1, b.count(t, "deliveries_p"+b.suffix()), "the delivery lives in its message's partition")

	rep, err := b.current.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, retention.Dropped, rep.Due[b.suffix()])
	for _, table := range []string{"messages", "deliveries", "attempts", "replay_deliveries"} {
		require.False(t, b.partitionExists(t, table+"_p"+b.suffix()), "%s's partition is dropped", table)
	}
	require.Zero(t, b.count(t, "deliveries"))
	require.NotEmpty(t, rep.Created, "the current pass creates partitions from now on")
	var ahead time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT max(upper_at) FROM herald.history_partitions`).Scan(&ahead))
	require.GreaterOrEqual(t, ahead, time.Now().Add(2*time.Minute), "partitions exist ahead of now")

	// A row made later for the dropped range lands in the default partition.
	late := testfactory.Message(t, b.pool, &testfactory.MessageOpts{ID: idAt(t, b.past.Add(20*time.Second)), TenantID: endpoint.TenantID})
	require.Equal(t, 1, b.count(t, "messages_p_default"))
	rep, err = b.current.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, "messages_p_default"), "the default partition is never dropped")
	require.NotZero(t, late.ID)
}

func TestPendingOrUndispatchedHistoryIsKeptPastRetentionUntilSettled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	endpoint := testfactory.Endpoint(t, b.pool, nil)
	undispatched := testfactory.Message(t, b.pool, &testfactory.MessageOpts{ID: idAt(t, b.past.Add(time.Second)), TenantID: endpoint.TenantID})

	rep, err := b.current.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, retention.Undispatched, rep.Due[b.suffix()])

	_, err = b.pool.Exec(ctx, `UPDATE herald.messages SET dispatched_at = now() WHERE id = $1`, undispatched.ID)
	require.NoError(t, err)
	pending := testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: undispatched.ID, EndpointID: endpoint.ID})
	rep, err = b.current.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, retention.Pending, rep.Due[b.suffix()])
	require.Equal(t, 1, b.count(t, "deliveries"), "the pending delivery is kept")

	_, err = b.pool.Exec(ctx, `UPDATE herald.deliveries SET status = 'succeeded', completed_at = now() WHERE id = $1`, pending.ID)
	require.NoError(t, err)
	rep, err = b.current.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, retention.Dropped, rep.Due[b.suffix()], "settled, it goes at the next pass")
}

// A UUIDv7 is made before its transaction commits: a message whose id
// falls in a partition already judged settled may still be committing. The
// drop takes the locks that every writer holds before it looks, so it waits
// for (here: times out on) the writer, then sees its row.
func TestARowCommittedAfterTheCheckIsNeverDropped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	endpoint := testfactory.Endpoint(t, b.pool, nil)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	_, err = tx.Exec(ctx, `INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body) VALUES ($1, $2, 'invoice.paid', 'inv_1', 1, '{}')`,
		idAt(t, b.past.Add(30*time.Second)), endpoint.TenantID)
	require.NoError(t, err)

	rep, err := b.current.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, retention.Busy, rep.Due[b.suffix()], "the drop waits for the writer and gives up at its lock timeout")

	require.NoError(t, tx.Commit(ctx))
	rep, err = b.current.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, retention.Undispatched, rep.Due[b.suffix()], "once committed, the message keeps its partition")
	require.Equal(t, 1, b.count(t, "messages_p"+b.suffix()))
}

func TestPublishIdempotencyKeysArePrunedPastRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	tenant := testfactory.Tenant(t, b.pool, nil)
	_, err := b.pool.Exec(ctx, `INSERT INTO herald.publish_idempotency_keys (tenant_id, idempotency_key, message_id, created_at)
VALUES ($1, 'old', $2, now() - interval '2 hours'), ($1, 'new', $2, now())`, tenant.ID, uuid.Must(uuid.NewV7()))
	require.NoError(t, err)
	rep, err := b.current.Pass(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, rep.PrunedKeys)
	var keys []string
	rows, err := b.pool.Query(ctx, `SELECT idempotency_key FROM herald.publish_idempotency_keys WHERE tenant_id = $1`, tenant.ID)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	require.Equal(t, []string{"new"}, keys)
}

func TestCheckRefusesARetentionShorterThanTheRetryWindowPlusAnInterval(t *testing.T) {
	t.Parallel()
	err := retention.Config{Retention: 72 * time.Hour, RetryWindow: 72 * time.Hour}.Check()
	require.ErrorIs(t, err, retention.ErrConfig)
	require.ErrorContains(t, err, "shorter than the retry window (72h0m0s) plus one partition interval (24h0m0s)")
	require.NoError(t, retention.Config{Retention: 96 * time.Hour, RetryWindow: 72 * time.Hour}.Check())
	require.ErrorContains(t, retention.Config{Interval: time.Second}.Check(), "at least 1m0s")
	require.ErrorContains(t, retention.Config{Interval: 90500 * time.Millisecond}.Check(), "whole seconds")
}

func TestAChangedIntervalRemakesThePartitionsNotBegunYet(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	// The migration made days; the template may be a few days old.
	now := time.Now()
	var future int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM herald.history_partitions WHERE lower_at > $1`, now).Scan(&future))
	m, err := retention.New(retention.Config{Pool: pool, Interval: time.Hour, Now: func() time.Time { return now }})
	require.NoError(t, err)
	rep, err := m.Pass(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Remade, future, "every day not begun is remade")
	var longest time.Duration
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(max(extract(epoch FROM upper_at - lower_at)), 0)::bigint * 1000000000 FROM herald.history_partitions WHERE lower_at > $1`, now).Scan(&longest))
	require.LessOrEqual(t, longest, time.Hour, "the partitions ahead are hours")
}
