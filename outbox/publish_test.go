package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/outbox"
)

const tenant = "acme"

type testBundle struct {
	pool *pgxpool.Pool
}

func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, id := range []string{tenant, "globex"} {
		testfactory.Tenant(t, pool, &testfactory.TenantOpts{ID: id})
	}
	return &testBundle{pool: pool}, ctx
}

func invoicePaid(objectID string) outbox.Message {
	return outbox.Message{
		Tenant:   tenant,
		Type:     "invoice.paid",
		ObjectID: objectID,
		Data:     map[string]any{"amount": 4200, "currency": "eur"},
	}
}

func (b *testBundle) publishCommitted(t *testing.T, ctx context.Context, msg outbox.Message) outbox.Published {
	t.Helper()
	p, err := outbox.PublishPool(ctx, b.pool, msg)
	require.NoError(t, err)
	return p
}

func (b *testBundle) messageCount(t *testing.T, ctx context.Context) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.messages").Scan(&n))
	return n
}

// objectVersion returns the stored version of an object, 0 when it has none.
func (b *testBundle) objectVersion(t *testing.T, ctx context.Context, objectID string) int64 {
	t.Helper()
	var v int64
	err := b.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM herald.object_versions WHERE tenant_id = $1 AND object_id = $2",
		tenant, objectID).Scan(&v)
	require.NoError(t, err)
	return v
}

type wireBody struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Object    struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
	} `json:"object"`
	Data map[string]any `json:"data"`
}

func TestPublishCommitStoresWireBody(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	before := time.Now().Truncate(time.Second)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	p, err := outbox.Publish(ctx, tx, invoicePaid("inv_123"))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	require.Equal(t, int64(1), p.Version)
	require.False(t, p.Duplicate)
	require.Equal(t, uuid.Version(7), p.ID.Version(), "message ids are time-ordered UUIDv7")

	var (
		eventType, objectID, body string
		version                   int64
		createdAt                 time.Time
		dispatchedAt              *time.Time
	)
	err = b.pool.QueryRow(ctx, `SELECT event_type, object_id, object_version, body, created_at, dispatched_at
		FROM herald.messages WHERE id = $1 AND tenant_id = $2`, p.ID, tenant).
		Scan(&eventType, &objectID, &version, &body, &createdAt, &dispatchedAt)
	require.NoError(t, err)
	require.Equal(t, "invoice.paid", eventType)
	require.Equal(t, "inv_123", objectID)
	require.Equal(t, int64(1), version)
	require.Nil(t, dispatchedAt)

	require.True(t, strings.HasPrefix(body, `{"type":"invoice.paid","timestamp":"`), "envelope keys come in wire order: %s", body)
	require.Contains(t, body, `,"object":{"id":"inv_123","version":1},"data":{`)
	var wire wireBody
	require.NoError(t, json.Unmarshal([]byte(body), &wire))
	require.Equal(t, "invoice.paid", wire.Type)
	require.Equal(t, "inv_123", wire.Object.ID)
	require.Equal(t, int64(1), wire.Object.Version)
	require.Equal(t, map[string]any{"amount": float64(4200), "currency": "eur"}, wire.Data)
	ts, err := time.Parse(time.RFC3339, wire.Timestamp)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(wire.Timestamp, "Z"), "timestamp is UTC: %s", wire.Timestamp)
	require.WithinDuration(t, before, ts, time.Minute)
	require.Equal(t, createdAt.Truncate(time.Second).UTC(), ts, "timestamp is the message's creation time")
	require.WithinDuration(t, createdAt, time.Unix(p.ID.Time().UnixTime()), time.Millisecond, "the id carries the creation time")

	second := b.publishCommitted(t, ctx, invoicePaid("inv_123"))
	require.Equal(t, int64(2), second.Version)
	require.Less(t, p.ID.String(), second.ID.String(), "later messages sort after earlier ones")
	first := b.publishCommitted(t, ctx, invoicePaid("inv_456"))
	require.Equal(t, int64(1), first.Version, "versions count per object")
}

func TestPublishVersionsCountPerTenant(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	b.publishCommitted(t, ctx, invoicePaid("inv_1"))
	other := invoicePaid("inv_1")
	other.Tenant = "globex"
	p := b.publishCommitted(t, ctx, other)
	require.Equal(t, int64(1), p.Version)
}

func TestPublishRollbackLeavesNoTrace(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	p, err := outbox.Publish(ctx, tx, invoicePaid("inv_1"))
	require.NoError(t, err)
	require.Equal(t, int64(1), p.Version)
	require.NoError(t, tx.Rollback(ctx))

	require.Zero(t, b.messageCount(t, ctx))
	require.Zero(t, b.objectVersion(t, ctx, "inv_1"), "a rolled-back publish takes no version")
	require.Equal(t, int64(1), b.publishCommitted(t, ctx, invoicePaid("inv_1")).Version)
}

func TestPublishIdempotencyKey(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	msg := invoicePaid("inv_1")
	msg.IdempotencyKey = "payment-9"
	first := b.publishCommitted(t, ctx, msg)
	require.False(t, first.Duplicate)

	msg.Data = map[string]any{"amount": 1}
	again := b.publishCommitted(t, ctx, msg)
	require.True(t, again.Duplicate)
	require.Equal(t, first.ID, again.ID, "a repeated key returns the first message")
	require.Equal(t, first.Version, again.Version)
	require.Equal(t, 1, b.messageCount(t, ctx))
	require.Equal(t, int64(1), b.objectVersion(t, ctx, "inv_1"), "a repeated key bumps no version")

	other := msg
	other.Tenant = "globex"
	require.False(t, b.publishCommitted(t, ctx, other).Duplicate, "keys are unique per tenant")

	require.Equal(t, int64(2), b.publishCommitted(t, ctx, invoicePaid("inv_1")).Version)
}

func TestPublishIdempotencyKeyRepeatedInOneTransaction(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	msg := invoicePaid("inv_1")
	msg.IdempotencyKey = "payment-9"
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	first, err := outbox.Publish(ctx, tx, msg)
	require.NoError(t, err)
	again, err := outbox.Publish(ctx, tx, msg)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	require.True(t, again.Duplicate)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, 1, b.messageCount(t, ctx))
	require.Equal(t, int64(1), b.objectVersion(t, ctx, "inv_1"))
}

// Two transactions publish one key at once. The second passes the check for
// an existing message before the first commits, so it takes the path that
// finds the conflict at insert time and gives back the version it took.
func TestPublishIdempotencyKeyRace(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name         string
		secondObject string
	}{
		{"same object", "inv_1"},
		{"other object", "inv_2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, ctx := setup(t)

			msg := invoicePaid("inv_1")
			msg.IdempotencyKey = "payment-9"
			txA, err := b.pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = txA.Rollback(ctx) }()
			first, err := outbox.Publish(ctx, txA, msg)
			require.NoError(t, err)

			txB, err := b.pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = txB.Rollback(ctx) }()
			var pidB int
			require.NoError(t, txB.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pidB))
			second := msg
			second.ObjectID = tt.secondObject
			type result struct {
				p   outbox.Published
				err error
			}
			done := make(chan result, 1)
			go func() {
				p, err := outbox.Publish(ctx, txB, second)
				done <- result{p, err}
			}()
			b.waitUntilBlocked(t, ctx, pidB)
			require.NoError(t, txA.Commit(ctx))

			got := <-done
			require.NoError(t, got.err)
			require.True(t, got.p.Duplicate)
			require.Equal(t, first.ID, got.p.ID)
			require.Equal(t, int64(1), got.p.Version)
			require.NoError(t, txB.Commit(ctx))

			require.Equal(t, 1, b.messageCount(t, ctx))
			require.Equal(t, int64(1), b.objectVersion(t, ctx, "inv_1"))
			require.Zero(t, b.objectVersion(t, ctx, "inv_2"))
		})
	}
}

// waitUntilBlocked waits until the backend pid waits for a lock.
func (b *testBundle) waitUntilBlocked(t *testing.T, ctx context.Context, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		var waiting bool
		err := b.pool.QueryRow(ctx, "SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "backend %d never waited for the other transaction", pid)
}

// Many transactions publish for one object at once. Every version from 1 to
// N is used exactly once, and an observer never sees a gap among committed
// versions: version order is commit order.
func TestPublishConcurrentVersions(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	const publishers, perPublisher = 20, 10
	stop := make(chan struct{})
	observed := make(chan error, 1)
	go func() {
		observed <- b.observeNoGaps(ctx, "inv_1", stop)
	}()

	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for range publishers {
		wg.Go(func() {
			for range perPublisher {
				if _, err := outbox.PublishPool(ctx, b.pool, invoicePaid("inv_1")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, <-observed)

	rows, err := b.pool.Query(ctx, "SELECT object_version FROM herald.messages WHERE object_id = 'inv_1' ORDER BY object_version")
	require.NoError(t, err)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	want := make([]int64, publishers*perPublisher)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, versions)
	require.Equal(t, int64(publishers*perPublisher), b.objectVersion(t, ctx, "inv_1"))
}

// observeNoGaps reads the committed versions of an object until stop closes
// and fails if they are ever not exactly 1..k.
func (b *testBundle) observeNoGaps(ctx context.Context, objectID string, stop <-chan struct{}) error {
	for {
		var count, distinct, highest int64
		err := b.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT object_version), coalesce(max(object_version), 0)
			FROM herald.messages WHERE tenant_id = $1 AND object_id = $2`, tenant, objectID).Scan(&count, &distinct, &highest)
		if err != nil {
			return err
		}
		if count != distinct || count != highest {
			return errors.New("committed versions are not 1..k: a later version committed before an earlier one")
		}
		select {
		case <-stop:
			return nil
		default:
		}
	}
}
