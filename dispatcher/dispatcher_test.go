package dispatcher_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/signing"
)

func TestCommitDeliversOnce(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint, secret := b.endpoint(t, ctx, tenant, r.URL)
	b.start(t, dispatcher.Config{})

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	msg := event("invoice.paid")
	msg.ObjectID = "inv_123"
	p, err := outbox.Publish(ctx, tx, msg)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	b.waitSucceeded(t, ctx, 1, 20*time.Second)
	require.Equal(t, "succeeded", b.deliveryStatus(t, ctx, p.ID, endpoint))
	reqs := r.Requests()
	require.Len(t, reqs, 1, "delivered once")
	require.Equal(t, headerID(p.ID), reqs[0].Header.Get(signing.HeaderID))
	require.NoError(t, signing.Verifier{Secrets: []signing.Secret{secret}}.Verify(reqs[0].Header, reqs[0].Body))

	var body struct {
		Type   string `json:"type"`
		Object struct {
			ID      string `json:"id"`
			Version int64  `json:"version"`
		} `json:"object"`
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
	require.Equal(t, "invoice.paid", body.Type)
	require.Equal(t, "inv_123", body.Object.ID)
	require.Equal(t, int64(1), body.Object.Version)
	require.Equal(t, map[string]any{"amount": float64(4200)}, body.Data)

	var dispatched bool
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT dispatched_at IS NOT NULL FROM herald.messages WHERE id = $1", p.ID).Scan(&dispatched))
	require.True(t, dispatched)
}

func TestRollbackSendsNothing(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	b.endpoint(t, ctx, tenant, r.URL)
	b.start(t, dispatcher.Config{})

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	rolledBack, err := outbox.Publish(ctx, tx, event("invoice.paid"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	// A message committed after the rolled-back one: once it has arrived,
	// the rolled-back one would have too.
	barrier := b.publish(t, ctx, event("invoice.paid"))

	b.waitSucceeded(t, ctx, 1, 20*time.Second)
	require.Equal(t, map[string]int{headerID(barrier): 1}, webhookIDs(r.Requests()))
	require.NotContains(t, webhookIDs(r.Requests()), headerID(rolledBack.ID))
	var messages int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.messages").Scan(&messages))
	require.Equal(t, 1, messages)
}

func TestFanOutMatchesSubscriptions(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	everything, _ := b.endpoint(t, ctx, tenant, r.URL)
	invoices, _ := b.endpoint(t, ctx, tenant, r.URL, "invoice.created", "invoice.paid")
	users, _ := b.endpoint(t, ctx, tenant, r.URL, "user.created")
	disabled, _ := b.endpoint(t, ctx, tenant, r.URL)
	otherTenant, _ := b.endpoint(t, ctx, "globex", r.URL)
	_, err := b.store.DisableEndpoint(ctx, disabled, "paused by its owner")
	require.NoError(t, err)
	b.start(t, dispatcher.Config{})

	paid := b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, 2, 20*time.Second)

	require.Equal(t, "succeeded", b.deliveryStatus(t, ctx, paid, everything), "no event types means every type")
	require.Equal(t, "succeeded", b.deliveryStatus(t, ctx, paid, invoices))
	require.Equal(t, "skipped", b.deliveryStatus(t, ctx, paid, disabled), "a disabled endpoint's delivery is recorded, not sent")
	for _, endpoint := range []any{users, otherTenant} {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.deliveries WHERE endpoint_id = $1", endpoint).Scan(&n))
		require.Zero(t, n, "endpoint %s must get no delivery", endpoint)
	}
	require.Equal(t, 2, r.Count())

	// A message nobody subscribes to is dispatched with no delivery.
	unwanted := b.publish(t, ctx, outbox.Message{Tenant: "globex", Type: "user.deleted", ObjectID: "u_1", Data: map[string]any{}})
	require.Eventually(t, func() bool {
		var dispatched bool
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT dispatched_at IS NOT NULL FROM herald.messages WHERE id = $1", unwanted).Scan(&dispatched))
		return dispatched
	}, 20*time.Second, 20*time.Millisecond)
}

func TestRetriesThroughTheDispatcher(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(500, 500, 200))
	endpoint, _ := b.endpoint(t, ctx, tenant, r.URL)
	b.start(t, dispatcher.Config{})

	message := b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, 1, 20*time.Second)
	require.Equal(t, "succeeded", b.deliveryStatus(t, ctx, message, endpoint))
	require.Equal(t, map[string]int{headerID(message): 3}, webhookIDs(r.Requests()))
	var attempts int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.attempts").Scan(&attempts))
	require.Equal(t, 3, attempts)
}

func TestGoneStopsLaterMessages(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	gone := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusGone))
	healthy := webhooktest.NewReceiver(t, webhooktest.Status(200))
	goneEndpoint, _ := b.endpoint(t, ctx, tenant, gone.URL)
	b.endpoint(t, ctx, tenant, healthy.URL)
	b.start(t, dispatcher.Config{})

	first := b.publish(t, ctx, event("invoice.paid"))
	require.Eventually(t, func() bool { return b.deliveryStatus(t, ctx, first, goneEndpoint) == "failed" }, 20*time.Second, 20*time.Millisecond)
	later := b.publish(t, ctx, event("invoice.paid"))
	// The healthy endpoint receiving the later message means it was fanned out.
	require.Eventually(t, func() bool { return webhookIDs(healthy.Requests())[headerID(later)] == 1 }, 20*time.Second, 20*time.Millisecond)

	require.Equal(t, "skipped", b.deliveryStatus(t, ctx, later, goneEndpoint))
	require.Equal(t, map[string]int{headerID(first): 1}, webhookIDs(gone.Requests()))
}

func TestTwoDispatchersDeliverEachOnce(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	const messages, endpoints = 1000, 3
	receivers := make([]*webhooktest.Receiver, endpoints)
	for i := range receivers {
		receivers[i] = webhooktest.NewReceiver(t, webhooktest.Status(200))
		b.endpoint(t, ctx, tenant, receivers[i].URL)
	}
	b.start(t, dispatcher.Config{Workers: 20, BatchSize: 50})
	b.start(t, dispatcher.Config{Workers: 20, BatchSize: 50})

	// Producers publish while both dispatchers drain.
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := range messages / 4 {
				_, err := outbox.PublishPool(ctx, b.pool, outbox.Message{
					Tenant: tenant, Type: "invoice.paid", ObjectID: fmt.Sprintf("inv_%d_%d", p, i), Data: map[string]any{"n": i},
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	b.waitSucceeded(t, ctx, messages*endpoints, 3*time.Minute)
	require.Equal(t, map[string]int{"succeeded": messages * endpoints}, b.statuses(t, ctx))
	for i, r := range receivers {
		ids := webhookIDs(r.Requests())
		require.Len(t, ids, messages, "receiver %d", i)
		for id, n := range ids {
			require.Equal(t, 1, n, "receiver %d got %s %d times", i, id, n)
		}
	}
	var attempts int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.attempts").Scan(&attempts))
	require.Equal(t, messages*endpoints, attempts)
}

func TestStopLetsAttemptsFinish(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	arrived := make(chan struct{})
	r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		close(arrived)
		time.Sleep(500 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	endpoint, _ := b.endpoint(t, ctx, tenant, r.URL)
	stop := b.start(t, dispatcher.Config{})

	message := b.publish(t, ctx, event("invoice.paid"))
	<-arrived
	stop()
	require.Equal(t, "succeeded", b.deliveryStatus(t, ctx, message, endpoint), "the attempt in flight at stop must finish and be recorded")
}

func TestStopCancelsAttemptsAfterGrace(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	arrived := make(chan struct{}, 1)
	r := webhooktest.NewReceiver(t, func(n int, w http.ResponseWriter, req *http.Request) {
		if n == 1 {
			arrived <- struct{}{}
			<-req.Context().Done()
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	endpoint, _ := b.endpoint(t, ctx, tenant, r.URL)
	stop := b.start(t, dispatcher.Config{ShutdownGrace: 100 * time.Millisecond})

	message := b.publish(t, ctx, event("invoice.paid"))
	<-arrived
	stop()
	require.Equal(t, "pending", b.deliveryStatus(t, ctx, message, endpoint), "a cancelled attempt is not recorded as a failure")

	// The next dispatcher sends it again.
	b.start(t, dispatcher.Config{})
	require.Eventually(t, func() bool { return b.deliveryStatus(t, ctx, message, endpoint) == "succeeded" }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string]int{headerID(message): 2}, webhookIDs(r.Requests()))
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	b, _ := setup(t)

	_, err := dispatcher.New(dispatcher.Config{Pool: b.pool, Delivery: delivery.Config{Secrets: b.store}, RescueStuckJobsAfter: 100 * time.Second})
	require.ErrorContains(t, err, "RescueStuckJobsAfter (1m40s) must exceed the job timeout (2m0s", "twice the longest endpoint timeout allowed (60 s)")
	_, err = dispatcher.New(dispatcher.Config{Pool: b.pool})
	require.ErrorContains(t, err, "Config.Secrets is nil")
	_, err = dispatcher.New(dispatcher.Config{Pool: b.pool, Delivery: delivery.Config{Secrets: b.store}, Workers: -1})
	require.ErrorContains(t, err, "must not be negative")
}

// A backlog to one endpoint fans out into full batch jobs even when one
// claim takes fewer messages than a job holds: the fan-out transaction
// claims again until the outbox is empty (or it has made enough
// deliveries), and groups the deliveries of all its claims.
func TestBacklogFansOutIntoFullBatchJobs(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	b.endpoint(t, ctx, tenant, r.URL)

	const backlog = 2*delivery.MaxBatch + 30
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	for range backlog {
		_, err := outbox.Publish(ctx, tx, event("invoice.paid"))
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit(ctx))
	b.start(t, dispatcher.Config{BatchSize: 50})

	b.waitSucceeded(t, ctx, backlog, 30*time.Second)
	require.Len(t, webhookIDs(r.Requests()), backlog, "every message delivered")
	rows, err := b.pool.Query(ctx, `SELECT jsonb_array_length(args->'delivery_ids') FROM herald.river_job
WHERE kind = $1 ORDER BY id`, delivery.BatchKind)
	require.NoError(t, err)
	sizes, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	require.Equal(t, []int{delivery.MaxBatch, delivery.MaxBatch, 30}, sizes)
}

// A backlog of messages that no endpoint subscribes to creates no
// deliveries; the fan-out still commits after FanOutLimit messages instead
// of claiming the whole backlog in one transaction. Each transaction
// stamps its messages with its own now().
func TestBacklogWithoutSubscribersFansOutInBoundedTransactions(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	const backlog = dispatcher.FanOutLimit + 100
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	for range backlog {
		_, err := outbox.Publish(ctx, tx, event("invoice.paid"))
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit(ctx))
	b.start(t, dispatcher.Config{})

	require.Eventually(t, func() bool {
		var left int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.messages WHERE dispatched_at IS NULL").Scan(&left))
		return left == 0
	}, 30*time.Second, 20*time.Millisecond, "the backlog was never dispatched")
	var transactions int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(DISTINCT dispatched_at) FROM herald.messages").Scan(&transactions))
	require.Equal(t, 2, transactions, "FanOutLimit messages, then 100")
	require.Empty(t, b.statuses(t, ctx), "no deliveries")
}
