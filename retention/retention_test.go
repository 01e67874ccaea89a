package retention_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/replay"
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

// oldMessage inserts a message of tenant made at at, dispatched then
// unless undispatched.
func oldMessage(t *testing.T, b testBundle, tenant string, at time.Time, undispatched bool) uuid.UUID {
	t.Helper()
	opts := &testfactory.MessageOpts{ID: idAt(t, at), TenantID: tenant, CreatedAt: &at}
	if !undispatched {
		opts.DispatchedAt = &at
	}
	return testfactory.Message(t, b.pool, opts).ID
}

// settled inserts a succeeded delivery of message to endpoint with one
// attempt, and returns the delivery's id.
func settled(t *testing.T, b testBundle, message, endpoint uuid.UUID, at time.Time) uuid.UUID {
	t.Helper()
	d := testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: message, EndpointID: endpoint, Status: deliverystatus.Succeeded, CompletedAt: &at, CreatedAt: &at})
	attempt, err := historyid.Child(d.ID)
	require.NoError(t, err)
	_, err = b.pool.Exec(t.Context(), `INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at, duration_ms, outcome)
VALUES ($1, $2, $3, $4, 1, 'scheduled', $5, 10, 'succeeded')`, attempt, d.ID, message, endpoint, at)
	require.NoError(t, err)
	return d.ID
}

func (b testBundle) exists(t *testing.T, table string, column string, id uuid.UUID) bool {
	t.Helper()
	var ok bool
	require.NoError(t, b.pool.QueryRow(t.Context(), "SELECT EXISTS (SELECT FROM herald."+table+" WHERE "+column+" = $1)", id).Scan(&ok))
	return ok
}

// A tenant with a retention of its own shorter than the global one loses
// its settled history past its horizon at each pass; its pending and
// undispatched messages, its recent ones and other tenants' stay.
func TestATenantsOwnRetentionPurgesItsSettledHistoryOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	short := testfactory.Tenant(t, b.pool, nil).ID
	_, err := b.pool.Exec(ctx, `UPDATE herald.tenants SET retention = interval '1 hour' WHERE id = $1`, short)
	require.NoError(t, err)
	mine, mine2 := testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: short}), testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: short})
	other := testfactory.Endpoint(t, b.pool, nil)
	at := b.past.Add(10 * time.Second)

	gone := oldMessage(t, b, short, at, false)
	goneDelivery := settled(t, b, gone, mine.ID, at)
	replayID := uuid.Must(uuid.NewV7())
	_, err = b.pool.Exec(ctx, `INSERT INTO herald.replays (id, tenant_id, endpoint_id, since_at, until_at, only_failed, total) VALUES ($1, $2, $3, $4, now(), false, 1)`,
		replayID, short, mine.ID, at)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO herald.replay_deliveries (replay_id, delivery_id) VALUES ($1, $2)`, replayID, goneDelivery)
	require.NoError(t, err)

	halfPending := oldMessage(t, b, short, at.Add(time.Second), false)
	settled(t, b, halfPending, mine.ID, at)
	pending := testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: halfPending, EndpointID: mine2.ID, CreatedAt: &at})
	undispatched := oldMessage(t, b, short, at.Add(2*time.Second), true)
	recentAt := time.Now().Add(-time.Minute)
	recent := oldMessage(t, b, short, recentAt, false)
	settled(t, b, recent, mine.ID, recentAt)
	others := oldMessage(t, b, other.TenantID, at, false)
	othersDelivery := settled(t, b, others, other.ID, at)

	global, err := retention.New(retention.Config{Pool: b.pool, Interval: time.Minute, Retention: 3 * time.Hour, LockTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	rep, err := global.Pass(ctx)
	require.NoError(t, err)
	require.NotContains(t, rep.Due, b.suffix(), "the global retention keeps the partition")
	p := rep.Purged[short]
	require.NotNil(t, p, "the tenant with its own retention is purged")
	require.Equal(t, time.Hour, p.Retention)
	require.True(t, p.Done)
	require.EqualValues(t, 1, p.Messages)
	require.EqualValues(t, 1, p.Deliveries)
	require.EqualValues(t, 1, p.Attempts)
	require.EqualValues(t, 1, p.Kept, "the message with a pending delivery is kept")
	require.NotContains(t, rep.Purged, other.TenantID, "a tenant without its own retention is not purged")

	require.False(t, b.exists(t, "messages", "id", gone))
	require.False(t, b.exists(t, "deliveries", "id", goneDelivery))
	require.False(t, b.exists(t, "attempts", "message_id", gone))
	require.False(t, b.exists(t, "replay_deliveries", "delivery_id", goneDelivery))
	for _, id := range []uuid.UUID{halfPending, undispatched, recent, others} {
		require.True(t, b.exists(t, "messages", "id", id), "message %s is kept", id)
	}
	require.True(t, b.exists(t, "deliveries", "id", pending.ID))
	require.True(t, b.exists(t, "attempts", "message_id", halfPending), "a kept message keeps its attempts")
	require.True(t, b.exists(t, "attempts", "message_id", recent))
	require.True(t, b.exists(t, "deliveries", "id", othersDelivery))

	_, err = b.pool.Exec(ctx, `UPDATE herald.deliveries SET status = 'failed', completed_at = now() WHERE id = $1`, pending.ID)
	require.NoError(t, err)
	rep, err = global.Pass(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, rep.Purged[short].Messages, "settled, it goes at the next pass")
	require.EqualValues(t, 2, rep.Purged[short].Deliveries)
	require.False(t, b.exists(t, "messages", "id", halfPending))
	require.True(t, b.exists(t, "messages", "id", undispatched), "an undispatched message is never purged")
}

// The purge goes in batches, each its own transaction, and walks past
// messages it keeps.
func TestATenantsPurgeWalksItsHistoryInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	short := testfactory.Tenant(t, b.pool, nil).ID
	_, err := b.pool.Exec(ctx, `UPDATE herald.tenants SET retention = interval '1 hour' WHERE id = $1`, short)
	require.NoError(t, err)
	endpoint := testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: short})
	at := b.past.Add(time.Second)
	first := oldMessage(t, b, short, at, false)
	testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: first, EndpointID: endpoint.ID, CreatedAt: &at})
	// More than a batch of settled messages after the pending one, in one
	// statement as a producer's bulk load would.
	n := retention.PurgeBatch + 20
	_, err = b.pool.Exec(ctx, `
WITH m AS (
  INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, created_at, dispatched_at)
  SELECT herald.history_bound($2::timestamptz + i * interval '1 millisecond'), $1, 'invoice.paid', 'inv_' || i, 1, '{}', $2::timestamptz + i * interval '1 millisecond', $2
  FROM generate_series(1, $3) i
  RETURNING id)
INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status, completed_at)
SELECT m.id, m.id, $4, $1, 'succeeded', $2 FROM m`, short, at.Add(time.Second), n, endpoint.ID)
	require.NoError(t, err)

	global, err := retention.New(retention.Config{Pool: b.pool, Interval: time.Minute, Retention: 3 * time.Hour})
	require.NoError(t, err)
	rep, err := global.Pass(ctx)
	require.NoError(t, err)
	p := rep.Purged[short]
	require.True(t, p.Done)
	require.EqualValues(t, n, p.Messages)
	require.EqualValues(t, n, p.Deliveries)
	require.EqualValues(t, 1, p.Kept)
	require.Equal(t, 1, b.count(t, "messages"), "only the pending message is left")
}

// Each pass records its settings for the api, which judges a tenant's own
// retention and a replay's start by them.
func TestAPassRecordsItsSettingsAndTheTenantsRetentionFollows(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	s, err := retention.ReadSettings(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, retention.Settings{Retention: retention.DefaultRetention, RetryWindow: 72 * time.Hour, Interval: retention.DefaultInterval}, s,
		"before any pass, the dispatchers' defaults")

	m, err := retention.New(retention.Config{Pool: pool, Interval: time.Hour, Retention: 10 * 24 * time.Hour, RetryWindow: 48 * time.Hour})
	require.NoError(t, err)
	_, err = m.Pass(ctx)
	require.NoError(t, err)
	s, err = retention.ReadSettings(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, retention.Settings{Retention: 10 * 24 * time.Hour, RetryWindow: 48 * time.Hour, Interval: time.Hour}, s)
	require.Equal(t, 49*time.Hour, s.MinTenantRetention())

	tenant := testfactory.Tenant(t, pool, nil).ID
	got, err := retention.TenantRetention(ctx, pool, tenant)
	require.NoError(t, err)
	require.Equal(t, 10*24*time.Hour, got, "without its own, the global retention")
	_, err = pool.Exec(ctx, `UPDATE herald.tenants SET retention = interval '3 days' WHERE id = $1`, tenant)
	require.NoError(t, err)
	got, err = retention.TenantRetention(ctx, pool, tenant)
	require.NoError(t, err)
	require.Equal(t, 72*time.Hour, got)
	own := 72 * time.Hour
	require.Equal(t, own, s.Effective(&own))
	longer := 20 * 24 * time.Hour
	require.Equal(t, s.Retention, s.Effective(&longer), "a tenant's own never lengthens the global one")
}

func TestCheckTenantAllowsOnlyAShorterRetentionAboveTheRetryWindow(t *testing.T) {
	t.Parallel()
	s := retention.Settings{Retention: 30 * 24 * time.Hour, RetryWindow: 72 * time.Hour, Interval: 24 * time.Hour}
	require.NoError(t, s.CheckTenant(7*24*time.Hour))
	require.NoError(t, s.CheckTenant(96*time.Hour))
	err := s.CheckTenant(30 * 24 * time.Hour)
	require.ErrorIs(t, err, retention.ErrTenantRetention)
	require.ErrorContains(t, err, "not shorter than the dispatchers' --retention (720h0m0s, 2592000 seconds)")
	err = s.CheckTenant(95 * time.Hour)
	require.ErrorIs(t, err, retention.ErrTenantRetention)
	require.ErrorContains(t, err, "shorter than the retry window (72h0m0s) plus one partition interval (24h0m0s)")
	require.ErrorContains(t, err, "at least 345600 seconds")
	require.ErrorContains(t, s.CheckTenant(0), "not a positive whole number of seconds")
	require.ErrorContains(t, s.CheckTenant(96*time.Hour+time.Millisecond), "not a positive whole number of seconds")
}

// A resend holds its message until it commits: the purge skips the
// message meanwhile, and afterwards finds the delivery it made pending.
// Here the resend makes a new delivery, to an endpoint the message never
// went to, which no lock on the message's other deliveries would reveal.
func TestAPurgeNeverTakesAMessageBeingResent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	short := testfactory.Tenant(t, b.pool, nil).ID
	endpoint := testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: short})
	at := b.past.Add(time.Second)
	message := oldMessage(t, b, short, at, false)
	settled(t, b, message, endpoint.ID, at)
	added := testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: short})
	jobs, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	// A fixed clock, and a first pass before the tenant has its own
	// retention: the partitions exist before the resend begins (creating
	// one waits for every writer of the default partitions, which the
	// resend is until it commits).
	now := time.Now()
	global, err := retention.New(retention.Config{Pool: b.pool, Interval: time.Minute, Retention: 3 * time.Hour, LockTimeout: 200 * time.Millisecond,
		Now: func() time.Time { return now }})
	require.NoError(t, err)
	_, err = global.Pass(ctx)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE herald.tenants SET retention = interval '1 hour' WHERE id = $1`, short)
	require.NoError(t, err)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	resent, err := replay.ResendTx(ctx, tx, jobs, message, added.ID)
	require.NoError(t, err)
	rep, err := global.Pass(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Purged[short].Messages, "the message being resent is skipped")
	require.NoError(t, tx.Commit(ctx))

	rep, err = global.Pass(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Purged[short].Messages)
	require.EqualValues(t, 1, rep.Purged[short].Kept, "the new delivery is pending")
	require.True(t, b.exists(t, "messages", "id", message))
	require.True(t, b.exists(t, "deliveries", "id", resent.DeliveryID))
}

// Attaching a partition locks its parent's default partition, one table
// after another, while a reader may hold one of those and ask for the
// next: a deadlock, which Postgres broke by failing one side. When it
// failed the reader (a delivery's load, in a health pipeline test), an
// attempt failed. Creating partitions now gives way at the lock timeout,
// as dropping them does, and tries again at the next pass.
func TestCreatingPartitionsGivesWayToAReader(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	later := time.Now().Add(10 * 24 * time.Hour)
	m, err := retention.New(retention.Config{Pool: pool, Interval: 24 * time.Hour, LockTimeout: 200 * time.Millisecond,
		Now: func() time.Time { return later }})
	require.NoError(t, err)

	reader, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = reader.Rollback(ctx) }()
	_, err = reader.Exec(ctx, "LOCK TABLE herald.deliveries_p_default IN ACCESS SHARE MODE")
	require.NoError(t, err)
	var readerPID int
	require.NoError(t, reader.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&readerPID))

	type result struct {
		rep retention.Report
		err error
	}
	passed := make(chan result, 1)
	go func() {
		rep, err := m.Pass(ctx)
		passed <- result{rep, err}
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE NOT granted AND pid <> $1)`, readerPID).Scan(&waiting))
		return waiting
	}, 10*time.Second, time.Millisecond, "the pass waits for the reader's lock")
	// The reader reads the table the pass has locked meanwhile, if it
	// still holds it.
	_, err = reader.Exec(ctx, "SELECT count(*) FROM herald.messages_p_default")
	require.NoError(t, err, "the reader is never the one a deadlock fails")
	got := <-passed
	require.NoError(t, got.err)
	require.Empty(t, got.rep.Created, "nothing is created while the reader holds the locks")
	require.NoError(t, reader.Commit(ctx))

	rep, err := m.Pass(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Created, "the next pass creates them")
}
