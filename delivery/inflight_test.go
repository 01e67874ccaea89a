package delivery

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/health"
)

func TestInflightCapsEachEndpoint(t *testing.T) {
	t.Parallel()

	f := newTestInflight(2, 100)
	slow, other := uuid.New(), uuid.New()
	answered(f, slow, other)
	releaseFirst, ok := acquireOne(f, slow)
	require.True(t, ok)
	_, ok = acquireOne(f, slow)
	require.True(t, ok)
	_, ok = acquireOne(f, slow)
	require.False(t, ok, "a third attempt to one endpoint is over the cap")
	require.False(t, f.waitForRoom(t.Context(), slow, 0))
	require.True(t, f.waitForRoom(t.Context(), other, 0))
	_, ok = acquireOne(f, other)
	require.True(t, ok, "another endpoint has its own cap")

	releaseFirst()
	require.True(t, f.waitForRoom(t.Context(), slow, 0), "a released slot makes room")
	_, ok = acquireOne(f, slow)
	require.True(t, ok, "a released slot can be taken again")
}

// An endpoint that has not answered yet gets one attempt at a time: a new
// endpoint that hangs holds one worker, not the cap. Its first answer
// gives it the cap and wakes the jobs waiting for it; a missed answer
// after that does not take the cap back, an open breaker does.
func TestInflightTriesAnEndpointOneAttemptAtATime(t *testing.T) {
	t.Parallel()

	f := newTestInflight(3, 100)
	endpoint := uuid.New()
	f.learn(endpoint, testTenant, 0, 0)
	release, got := f.acquireUpTo(endpoint, testTenant, 3)
	require.Equal(t, 1, got, "a new endpoint is tried one attempt at a time")
	woken := make(chan bool)
	go func() { woken <- f.waitForRoom(t.Context(), endpoint, time.Hour) }()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.waiting[endpoint]) == 1
	}, 10*time.Second, time.Millisecond, "the next job waits for the endpoint")

	f.observe(endpoint, true)
	require.True(t, <-woken, "the first answer wakes the waiting job")
	_, got = f.acquireUpTo(endpoint, testTenant, 3)
	require.Equal(t, 2, got, "an answering endpoint has its whole cap")
	release()

	f.observe(endpoint, false)
	release, got = f.acquireUpTo(endpoint, testTenant, 3)
	require.Equal(t, 1, got, "a missed answer keeps the cap")
	release()
	for range health.BreakerThreshold - 1 {
		f.observe(endpoint, false)
	}
	_, got = f.acquireUpTo(endpoint, testTenant, 3)
	require.Zero(t, got, "behind its open breaker, one at a time, and two still run")
}

func TestInflightForgetsIdleEndpoints(t *testing.T) {
	t.Parallel()

	f := newTestInflight(1, 100)
	release, ok := acquireOne(f, uuid.New())
	require.True(t, ok)
	release()
	require.Empty(t, f.running, "an endpoint with nothing running must not stay in the map")
}

// A job that finds its endpoint full waits for a slot to be released rather
// than being held back at once, and gives up after its patience.
func TestInflightWaitsForRoom(t *testing.T) {
	t.Parallel()

	f, endpoint, release := fullEndpoint(t)

	require.False(t, f.waitForRoom(t.Context(), endpoint, time.Millisecond), "nothing was released within the patience")

	released := make(chan struct{})
	go func() {
		defer close(released)
		release()
	}()
	require.True(t, f.waitForRoom(t.Context(), endpoint, time.Hour), "the release wakes the waiter")
	<-released
	require.Empty(t, f.waiting, "nobody is left waiting")

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, ok := acquireOne(f, endpoint)
	require.True(t, ok)
	require.False(t, f.waitForRoom(cancelled, endpoint, time.Hour), "an ended job stops waiting")
}

// How long an endpoint's oldest attempt has been running sets the least
// snooze of a job held back by it: a hanging endpoint's backlog checks back
// about as often as a slot can free.
func TestInflightLongestRunning(t *testing.T) {
	t.Parallel()

	f := newTestInflight(3, 100)
	endpoint := uuid.New()
	answered(f, endpoint)
	require.Zero(t, f.longestRunning(endpoint), "nothing runs")

	releaseOld, got := f.acquireUpTo(endpoint, testTenant, 2)
	require.Equal(t, 2, got)
	time.Sleep(5 * time.Millisecond)
	releaseNew, ok := acquireOne(f, endpoint)
	require.True(t, ok)
	require.GreaterOrEqual(t, f.longestRunning(endpoint), 5*time.Millisecond, "the oldest attempt counts")

	releaseOld()
	require.Len(t, f.running[endpoint], 1, "both slots taken together are given back together")
	releaseNew()
	require.Zero(t, f.longestRunning(endpoint))
	require.Empty(t, f.running)
}

// A released slot wakes one waiting job, not all of them: each woken job
// reads its deliveries, and all but one would be held back after.
func TestInflightWakesOneWaiterPerSlot(t *testing.T) {
	t.Parallel()

	f := newTestInflight(2, 100)
	endpoint := uuid.New()
	answered(f, endpoint)
	release, ok := acquireOne(f, endpoint)
	require.True(t, ok)
	_, ok = acquireOne(f, endpoint)
	require.True(t, ok)

	ctx, cancel := context.WithCancel(t.Context())
	results := make(chan bool, 2)
	for range 2 {
		go func() { results <- f.waitForRoom(ctx, endpoint, time.Hour) }()
	}
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.waiting[endpoint]) == 2
	}, 10*time.Second, time.Millisecond)

	release()
	require.True(t, <-results, "one waiter gets the slot")
	f.mu.Lock()
	require.Len(t, f.waiting[endpoint], 1, "the other still waits")
	f.mu.Unlock()
	cancel()
	require.False(t, <-results, "the other gives up when its job ends")
	require.Empty(t, f.waiting)
}

// fullEndpoint returns a counter with a cap of one, an endpoint that has
// taken it, and the release of that slot.
func fullEndpoint(t *testing.T) (*inflight, uuid.UUID, func()) {
	t.Helper()
	f := newTestInflight(1, 100)
	endpoint := uuid.New()
	release, ok := acquireOne(f, endpoint)
	require.True(t, ok)
	return f, endpoint, release
}

// answered makes endpoints of testTenant answering, as a recorded answer
// to each does.
func answered(f *inflight, endpoints ...uuid.UUID) {
	for _, e := range endpoints {
		f.learn(e, testTenant, 0, 0)
		f.observe(e, true)
	}
}

// acquireOne takes one slot for endpoint of testTenant, as a delivery's
// job does.
func acquireOne(f *inflight, endpoint uuid.UUID) (release func(), ok bool) {
	release, got := f.acquireUpTo(endpoint, testTenant, 1)
	return release, got == 1
}

const testTenant = "acme"

// newTestInflight returns counts with the caps given and a gauge of its
// own.
func newTestInflight(cap, tenantCap int) *inflight {
	return newInflight(cap, tenantCap, prometheus.NewGauge(prometheus.GaugeOpts{Name: "breakers_open"}))
}

// A tenant's endpoints together hold at most the tenant's cap, its own
// where it has one; another tenant has room all the while, and a slot the
// tenant releases wakes a job waiting for the tenant.
func TestInflightCapsEachTenant(t *testing.T) {
	t.Parallel()

	f := newTestInflight(10, 2)
	first, second, third := uuid.New(), uuid.New(), uuid.New()
	for _, e := range []uuid.UUID{first, second, third} {
		f.learn(e, "noisy", 0, 0)
		f.observe(e, true)
	}
	releaseFirst, got := f.acquireUpTo(first, "noisy", 5)
	require.Equal(t, 2, got, "the tenant's cap bounds one endpoint's batch")
	_, got = f.acquireUpTo(second, "noisy", 1)
	require.Zero(t, got, "another endpoint of a full tenant gets nothing")
	require.False(t, f.waitForRoom(t.Context(), third, 0), "a job of a full tenant is held back before it loads")

	other := uuid.New()
	f.learn(other, "quiet", 0, 0)
	require.True(t, f.waitForRoom(t.Context(), other, 0), "another tenant has room")

	woken := make(chan bool)
	go func() { woken <- f.waitForRoom(t.Context(), third, time.Hour) }()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.waiting["noisy"]) == 1
	}, 10*time.Second, time.Millisecond, "the job waits for its tenant")
	releaseFirst()
	require.True(t, <-woken, "a slot the tenant released wakes the job")

	f.learn(second, "noisy", 4, 0)
	_, got = f.acquireUpTo(second, "noisy", 10)
	require.Equal(t, 4, got, "the tenant's own cap replaces the default")
}

// An endpoint whose latest health.BreakerThreshold attempts got no answer
// is held to one probe at a time, and the probes of one tenant's open
// breakers to half its cap; an answer closes the breaker.
func TestInflightBreaker(t *testing.T) {
	t.Parallel()

	f := newTestInflight(10, 4)
	dead, healthy := uuid.New(), uuid.New()
	answered(f, dead, healthy)
	for range health.BreakerThreshold {
		f.observe(dead, false)
	}
	require.Equal(t, 1.0, gaugeValue(t, f.open), "the gauge counts the open breaker")
	releaseProbe, got := f.acquireUpTo(dead, testTenant, 3)
	require.Equal(t, 1, got, "an open breaker lets one probe through")
	require.False(t, f.waitForRoom(t.Context(), dead, 0), "the endpoint's other jobs are held back")
	_, got = f.acquireUpTo(healthy, testTenant, 10)
	require.Equal(t, 3, got, "the tenant's healthy endpoint has the rest of the tenant's cap")

	second := uuid.New()
	f.learn(second, testTenant, 0, health.BreakerThreshold)
	_, got = f.acquireUpTo(second, testTenant, 1)
	require.Zero(t, got, "the tenant's probes are held to half its cap, and it is full anyway")
	releaseProbe()

	require.Equal(t, 2.0, gaugeValue(t, f.open))
	f.observe(dead, true)
	require.Equal(t, 1.0, gaugeValue(t, f.open), "an answer closes the breaker")
	_, got = f.acquireUpTo(dead, testTenant, 2)
	require.Equal(t, 1, got, "a closed breaker lets the endpoint have what its tenant has left")
}

// The probes of one tenant's open breakers share half the tenant's cap, so
// its dead endpoints leave its healthy ones the other half.
func TestInflightProbesShareHalfTheTenant(t *testing.T) {
	t.Parallel()

	f := newTestInflight(10, 4)
	var probes int
	for range 5 {
		e := uuid.New()
		f.learn(e, testTenant, 0, health.BreakerThreshold)
		_, got := f.acquireUpTo(e, testTenant, 1)
		probes += got
	}
	require.Equal(t, 2, probes, "five dead endpoints probe two at a time: half of the tenant's 4")
	healthy := uuid.New()
	answered(f, healthy)
	_, got := f.acquireUpTo(healthy, testTenant, 10)
	require.Equal(t, 2, got, "the healthy endpoint has the other half")
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	require.NoError(t, r.Register(g))
	families, err := r.Gather()
	require.NoError(t, err)
	return families[0].GetMetric()[0].GetGauge().GetValue()
}

// While one of a tenant's endpoints answers, the endpoints that do not
// (not tried yet, or whose latest attempt went unanswered) leave it a
// quarter of the tenant's cap, and the suspect ones among them take at
// most half: however many of a tenant's endpoints hang, its healthy one is
// not held behind them (issue 18, noisy-tenant-shared).
func TestInflightKeepsAQuarterForAnsweringEndpoints(t *testing.T) {
	t.Parallel()

	f := newTestInflight(10, 8)
	healthy := uuid.New()
	answered(f, healthy)
	f.learn(healthy, testTenant, 0, 0)

	untried := 0
	var releaseUntried []func()
	for range 8 {
		e := uuid.New()
		f.learn(e, testTenant, 0, 0)
		release, got := f.acquireUpTo(e, testTenant, 1)
		untried += got
		releaseUntried = append(releaseUntried, release)
	}
	require.Equal(t, 6, untried, "endpoints not tried yet take three quarters of the tenant's 8")

	suspect := uuid.New()
	f.learn(suspect, testTenant, 0, 1)
	require.False(t, f.waitForRoom(t.Context(), suspect, 0), "a suspect endpoint is not answering either")
	var got int

	woken := make(chan bool)
	go func() { woken <- f.waitForRoom(t.Context(), suspect, time.Hour) }()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.waiting[tenantShare{tenant: testTenant}]) == 1
	}, 10*time.Second, time.Millisecond, "the suspect endpoint's job waits for the share it is held by")
	releaseUntried[0]()
	require.True(t, <-woken, "a slot of that share released wakes it")
	releaseUntried[0], got = f.acquireUpTo(suspect, testTenant, 1)
	require.Equal(t, 1, got)

	_, got = f.acquireUpTo(healthy, testTenant, 10)
	require.Equal(t, 2, got, "the answering endpoint has the quarter left")

	for _, release := range releaseUntried {
		release()
	}
	var suspects int
	for range 6 {
		e := uuid.New()
		f.learn(e, testTenant, 0, 1)
		_, got := f.acquireUpTo(e, testTenant, 1)
		suspects += got
	}
	require.Equal(t, 4, suspects, "suspect endpoints take at most half of the tenant's 8, leaving room for those not tried yet")
	other := uuid.New()
	f.learn(other, testTenant, 0, 0)
	require.True(t, f.waitForRoom(t.Context(), other, 0), "an endpoint not tried yet finds the room suspect ones left it")
}

// The quarter is kept only while the tenant has an answering endpoint: an
// answer makes one, an unanswered attempt or a load that reads an
// unanswered streak unmakes it, and forgetting endpoints forgets it.
func TestInflightAnsweringFollowsTheLatestAttempt(t *testing.T) {
	t.Parallel()

	f := newTestInflight(10, 4)
	e := uuid.New()
	f.learn(e, testTenant, 0, 0)
	require.Zero(t, f.answering[testTenant], "not tried yet")
	f.observe(e, true)
	f.learn(e, testTenant, 0, 0)
	require.Equal(t, 1, f.answering[testTenant], "an answer makes it answering, and a load that reads no unanswered streak keeps it")
	f.learn(e, testTenant, 0, 1)
	require.Zero(t, f.answering[testTenant], "another process recorded an unanswered attempt")
	f.observe(e, true)
	f.observe(e, false)
	require.Empty(t, f.answering, "its latest attempt went unanswered")
}

// At most as many jobs as the endpoint cap wait in one queue: the next is
// held back at once rather than holding a worker too.
func TestInflightBoundsTheWaiters(t *testing.T) {
	t.Parallel()

	f, endpoint, release := fullEndpoint(t)
	waited := make(chan bool)
	go func() { waited <- f.waitForRoom(t.Context(), endpoint, time.Hour) }()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.waiting[endpoint]) == 1
	}, 10*time.Second, time.Millisecond)
	require.False(t, f.waitForRoom(t.Context(), endpoint, time.Hour), "the queue of an endpoint with a cap of one holds one job")
	release()
	require.True(t, <-waited)
}

// answeringEndpoint returns a worker whose endpoint cap is cap and an
// endpoint of testTenant whose latest attempt was answered.
func answeringEndpoint(cap int) (*Worker, uuid.UUID) {
	w := &Worker{inflight: newTestInflight(cap, 100), maxBusySnooze: DefaultMaxBusySnooze, timeout: DefaultTimeout}
	endpoint := uuid.New()
	w.inflight.learn(endpoint, testTenant, 0, 0)
	w.inflight.observe(endpoint, true)
	return w, endpoint
}

// A job held back by an answering endpoint's cap, however often in a row,
// comes back within AnsweringPatience (and its jitter): the endpoint is
// busy, not hanging. The doubling to MaxBusySnooze is for endpoints that
// do not answer.
func TestBusySnoozeOfAnsweringEndpoint(t *testing.T) {
	t.Parallel()

	w, endpoint := answeringEndpoint(1)
	for range 100 {
		require.Less(t, w.busySnooze(endpoint, 10), AnsweringPatience*3/2)
	}
	w.inflight.observe(endpoint, false)
	require.GreaterOrEqual(t, w.busySnooze(endpoint, 10), DefaultMaxBusySnooze/2, "an endpoint that stopped answering snoozes its backlog as before")
}

// A batch job woken by a release can find the slots taken by another job
// woken with it. While the endpoint answers it waits for the next release
// instead of being held back (on the old code it snoozed at once, and a
// backlog of batch jobs to one busy endpoint drained in a trickle of
// doubling snoozes).
func TestTakeSlotsWaitsAgainAtAnAnsweringEndpoint(t *testing.T) {
	t.Parallel()

	w, endpoint := answeringEndpoint(2)
	holder, got := w.inflight.acquireUpTo(endpoint, testTenant, 2)
	require.Equal(t, 2, got)
	d := loaded{endpointID: endpoint, tenantID: testTenant}
	type taken struct {
		release func()
		got     int
		err     error
	}
	results := make(chan taken, 2)
	for range 2 {
		go func() {
			release, got, _, err := w.takeSlots(t.Context(), &rivertype.JobRow{}, d, 2)
			results <- taken{release, got, err}
		}()
	}
	require.Eventually(t, func() bool {
		w.inflight.mu.Lock()
		defer w.inflight.mu.Unlock()
		return len(w.inflight.waiting[endpoint]) == 2
	}, 10*time.Second, time.Millisecond)
	holder()
	first := <-results
	require.NoError(t, first.err)
	require.Equal(t, 2, first.got, "the first woken takes both slots")
	first.release()
	second := <-results
	require.NoError(t, second.err, "the second waits for the next release")
	require.Equal(t, 2, second.got)
	second.release()
}
