package dispatcher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/store"
)

// lineReceiver is a receiver on loopback that checks, as an ordered
// endpoint's owner would, the order in which each object's versions come:
// it records every request by object and fails the test's invariants if two
// requests of one object are in flight at once.
type lineReceiver struct {
	URL string

	// answer returns the status for attempt n (1-based) of version v of
	// object; nil answers 200.
	answer func(object string, v int64, n int) int

	mu       sync.Mutex
	attempts map[string]map[int64]int
	got      map[string][]int64 // versions answered 2xx, in order
	sent     map[string][]int64 // every request's version, in order
	inflight map[string]int
	overlaps int
}

func newLineReceiver(t *testing.T, answer func(object string, v int64, n int) int) *lineReceiver {
	t.Helper()
	r := &lineReceiver{answer: answer, attempts: map[string]map[int64]int{}, got: map[string][]int64{},
		sent: map[string][]int64{}, inflight: map[string]int{}}
	server := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(server.Close)
	r.URL = server.URL
	return r
}

func (r *lineReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var p struct {
		Object struct {
			ID      string `json:"id"`
			Version int64  `json:"version"`
		} `json:"object"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	object, v := p.Object.ID, p.Object.Version
	r.mu.Lock()
	if r.attempts[object] == nil {
		r.attempts[object] = map[int64]int{}
	}
	r.attempts[object][v]++
	n := r.attempts[object][v]
	r.inflight[object]++
	if r.inflight[object] > 1 {
		r.overlaps++
	}
	r.sent[object] = append(r.sent[object], v)
	r.mu.Unlock()

	status := http.StatusOK
	if r.answer != nil {
		status = r.answer(object, v, n)
	}
	r.mu.Lock()
	r.inflight[object]--
	if status/100 == 2 {
		r.got[object] = append(r.got[object], v)
	}
	r.mu.Unlock()
	w.WriteHeader(status)
}

// received returns, by object, the versions answered 2xx in order.
func (r *lineReceiver) received() map[string][]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]int64, len(r.got))
	for o, vs := range r.got {
		out[o] = append([]int64(nil), vs...)
	}
	return out
}

func (r *lineReceiver) requests(object string) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.sent[object]...)
}

func (r *lineReceiver) overlapping() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.overlaps
}

// orderedEndpoint creates an endpoint with ordering "object" at url.
func (b *testBundle) orderedEndpoint(t *testing.T, ctx context.Context, url string) uuid.UUID {
	t.Helper()
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: url, Ordering: store.OrderingObject})
	require.NoError(t, err)
	require.Equal(t, store.OrderingObject, e.Ordering)
	return e.ID
}

func (b *testBundle) publishObject(t *testing.T, ctx context.Context, object string) uuid.UUID {
	t.Helper()
	return b.publish(t, ctx, outbox.Message{Tenant: tenant, Type: "invoice.updated", ObjectID: object, Data: map[string]any{}})
}

// upTo returns 1..n.
func upTo(n int) []int64 {
	vs := make([]int64, n)
	for i := range vs {
		vs[i] = int64(i + 1)
	}
	return vs
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two dispatchers fan out and deliver versions of 12 objects published by
// concurrent producers to an ordered endpoint whose answers are slow and
// sometimes fail: every object's versions arrive one at a time, each once
// it succeeded, in version order; an endpoint without ordering beside it
// gets them all too.
func TestOrderedDeliveryIsInVersionOrderPerObject(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := newLineReceiver(t, func(_ string, v int64, n int) int {
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
		if n == 1 && v%4 == 0 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	b.orderedEndpoint(t, ctx, r.URL)
	b.start(t, dispatcher.Config{})
	b.start(t, dispatcher.Config{})

	const objects, versions = 12, 10
	var wg sync.WaitGroup
	for o := range objects {
		wg.Go(func() {
			for range versions {
				b.publishObject(t, ctx, fmt.Sprintf("obj_%d", o))
			}
		})
	}
	wg.Wait()
	b.waitSucceeded(t, ctx, objects*versions, time.Minute)

	got := r.received()
	require.Len(t, got, objects)
	for o := range objects {
		require.Equal(t, upTo(versions), got[fmt.Sprintf("obj_%d", o)], "object %d's versions in order, each once", o)
	}
	require.Zero(t, r.overlapping(), "never two requests of one object in flight at once")
	var lines int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.ordered_lines").Scan(&lines))
	require.Zero(t, lines, "a line whose last version settled is gone")
}

// A version committed by its fan-out after a higher one's (another
// dispatcher's fan-out held it) still goes first: the higher one's job
// waits while the lower one is not fanned out, and gives way when it is.
func TestOrderedDeliveryWaitsForALowerVersionFannedOutLater(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := newLineReceiver(t, nil)
	b.orderedEndpoint(t, ctx, r.URL)
	first := b.publishObject(t, ctx, "obj")
	b.publishObject(t, ctx, "obj")

	// Another dispatcher's fan-out has claimed version 1 and not committed.
	held, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(ctx) }()
	_, err = held.Exec(ctx, "SELECT FROM herald.messages WHERE id = $1 FOR UPDATE", first)
	require.NoError(t, err)

	b.start(t, dispatcher.Config{})
	waitFor(t, 30*time.Second, "version 2 fanned out", func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.deliveries").Scan(&n))
		return n == 1
	})
	time.Sleep(500 * time.Millisecond)
	require.Empty(t, r.requests("obj"), "version 2 waits while version 1 is not fanned out")

	require.NoError(t, held.Rollback(ctx))
	b.waitSucceeded(t, ctx, 2, 30*time.Second)
	require.Equal(t, []int64{1, 2}, r.received()["obj"])
	require.Equal(t, []int64{1, 2}, r.requests("obj"))
}

// A head that keeps failing holds back its own object only, and for no
// longer than OrderedHeadLimit: then it fails as exhausted, with the
// operational event, and the next version goes.
func TestOrderedFailingHeadBlocksOnlyItsObjectUntilTheLimit(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := newLineReceiver(t, func(object string, v int64, _ int) int {
		if object == "stuck" && v == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	b.orderedEndpoint(t, ctx, r.URL)
	b.start(t, dispatcher.Config{Delivery: delivery.Config{OrderedHeadLimit: 2 * time.Second}})
	head := b.publishObject(t, ctx, "stuck")
	for range 3 {
		b.publishObject(t, ctx, "stuck")
		b.publishObject(t, ctx, "free")
	}

	waitFor(t, 30*time.Second, "the other object delivered", func() bool { return len(r.received()["free"]) == 3 })
	require.Equal(t, []int64{1, 2, 3}, r.received()["free"])
	for _, v := range r.requests("stuck") {
		require.Equal(t, int64(1), v, "nothing after the failing head is sent while it is retried")
	}

	b.waitSucceeded(t, ctx, 6, 30*time.Second)
	require.Equal(t, []int64{2, 3, 4}, r.received()["stuck"])
	var status, eventType string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT status FROM herald.deliveries WHERE message_id = $1", head).Scan(&status))
	require.Equal(t, "failed", status, "the head is given up")
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT event_type FROM herald.messages WHERE tenant_id = $1", health.DefaultOpsTenant).Scan(&eventType))
	require.Equal(t, health.TypeDeliveryExhausted, eventType)
}

// A resend of a version below the line's head does not jump the line: it
// waits while the head's request is in flight and goes before the versions
// behind the head. A replay of a settled line sends every version again in
// order, one at a time.
func TestOrderedResendAndReplayJoinTheLine(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	release := make(chan struct{})
	r := newLineReceiver(t, func(_ string, v int64, n int) int {
		if v == 3 && n == 1 {
			<-release
		}
		return http.StatusOK
	})
	endpoint := b.orderedEndpoint(t, ctx, r.URL)
	jobs := b.inserter(t)
	b.start(t, dispatcher.Config{})
	since := time.Now().Add(-time.Minute)
	second := uuid.Nil
	for v := range 4 {
		id := b.publishObject(t, ctx, "obj")
		if v == 1 {
			second = id
		}
	}
	waitFor(t, 30*time.Second, "version 3 in flight", func() bool { return len(r.requests("obj")) == 3 })

	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := replay.ResendTx(ctx, tx, jobs, second, endpoint)
		return err
	}))
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, []int64{1, 2, 3}, r.requests("obj"), "the resent version waits for the head in flight")
	close(release)
	waitFor(t, 30*time.Second, "the line drained", func() bool { return len(r.received()["obj"]) == 5 })
	require.Equal(t, []int64{1, 2, 3, 2, 4}, r.received()["obj"], "the resend goes after the head, before the versions behind it")

	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := replay.StartTx(ctx, tx, jobs, replay.Params{EndpointID: endpoint, Since: since})
		return err
	}))
	waitFor(t, 30*time.Second, "the replay delivered", func() bool { return len(r.received()["obj"]) == 9 })
	require.Equal(t, []int64{1, 2, 3, 4}, r.received()["obj"][5:], "a replay goes in version order")
	require.Zero(t, r.overlapping())
}

// A 410 disables an ordered endpoint and holds its line: the head stays
// pending, versions published meanwhile wait, and enabling the endpoint
// sends them all in order from where it stopped.
func TestOrderedDisablingHoldsTheLineAndEnablingResumesIt(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := newLineReceiver(t, func(_ string, v int64, n int) int {
		if v == 2 && n == 1 {
			return http.StatusGone
		}
		return http.StatusOK
	})
	endpoint := b.orderedEndpoint(t, ctx, r.URL)
	jobs := b.inserter(t)
	b.start(t, dispatcher.Config{})
	b.publishObject(t, ctx, "obj")
	b.publishObject(t, ctx, "obj")
	waitFor(t, 30*time.Second, "the endpoint disabled", func() bool {
		e, err := b.store.GetEndpoint(ctx, endpoint)
		require.NoError(t, err)
		return !e.Enabled
	})
	b.publishObject(t, ctx, "obj")
	b.publishObject(t, ctx, "obj")
	waitFor(t, 30*time.Second, "the versions published meanwhile wait in the parked line", func() bool {
		var parked, waiting int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT
    (SELECT count(*) FROM herald.ordered_lines WHERE endpoint_id = $1 AND head_delivery_id IS NULL),
    (SELECT count(*) FROM herald.ordered_waiting WHERE endpoint_id = $1)`, endpoint).Scan(&parked, &waiting))
		return parked == 1 && waiting == 3
	})
	require.Equal(t, map[string]int{"pending": 3, "succeeded": 1}, b.statuses(t, ctx), "disabling cancels nothing and skips nothing")
	require.Equal(t, []int64{1, 2}, r.requests("obj"))

	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := b.store.EnableEndpointTx(ctx, tx, endpoint); err != nil {
			return err
		}
		n, err := replay.ResumeTx(ctx, tx, jobs, endpoint)
		require.Equal(t, 1, n, "one line resumed")
		return err
	}))
	b.waitSucceeded(t, ctx, 4, 30*time.Second)
	require.Equal(t, []int64{1, 2, 3, 4}, r.received()["obj"])
}

// The reconciler gives the head of a line whose job was cancelled a new job,
// and none to the versions waiting behind it, which have none by rule.
func TestReconcilerRespectsOrderedLines(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	release := make(chan struct{})
	r := newLineReceiver(t, func(_ string, _ int64, n int) int {
		if n == 1 {
			<-release
		}
		return http.StatusOK
	})
	endpoint := b.orderedEndpoint(t, ctx, r.URL)
	for range 3 {
		b.publishObject(t, ctx, "obj")
	}
	// The head's request is cut short by a dispatcher stopping; then its
	// job is cancelled, as an operator might.
	stop := b.start(t, dispatcher.Config{ShutdownGrace: 100 * time.Millisecond})
	waitFor(t, 30*time.Second, "the head in flight", func() bool { return len(r.requests("obj")) == 1 })
	stop()
	close(release)
	_, err := b.pool.Exec(ctx, `UPDATE herald.river_job SET state = 'cancelled', finalized_at = now()
WHERE kind IN ('herald.delivery', 'herald.delivery_batch') AND finalized_at IS NULL`)
	require.NoError(t, err)
	var waiting int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.ordered_waiting WHERE endpoint_id = $1", endpoint).Scan(&waiting))
	require.Equal(t, 2, waiting)

	b.start(t, dispatcher.Config{ReconcileInterval: 200 * time.Millisecond})
	b.waitSucceeded(t, ctx, 3, 30*time.Second)
	require.Equal(t, []int64{1, 1, 2, 3}, r.requests("obj"), "the head again (its first request was cut short), then the rest in order")
}
