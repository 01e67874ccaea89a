package delivery

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/health"
)

// FirstBusySnooze is the mean delay after which a job held back by its
// endpoint's in-flight cap tries again the first time; each further time in
// a row doubles it, up to Config.MaxBusySnooze, and each delay d is drawn
// from [d/2, 3d/2). The delay is never shorter than the endpoint's oldest
// running request has been running: contention at a healthy endpoint
// clears within a few short snoozes, while the backlog of a slow or
// hanging endpoint checks back about as often as a slot can free, and soon
// only every MaxBusySnooze. Each snooze is a River update and fetch; the
// ramp from 50 ms had cost 1.7 rows written per healthy delivery in the
// isolation benchmark, 0.8 with the floor (docs/benchmarks.md).
const FirstBusySnooze = 50 * time.Millisecond

// BusyPatience is how long a job that has not been held back before waits
// in the process for its endpoint to have room before it is held back; a
// released slot wakes one waiting job, first come first. A healthy
// endpoint reaches its cap only while the machine stalls, and a slot frees
// within milliseconds; a snooze would add at least a River round trip and,
// doubling, hundreds of milliseconds (in the steady benchmark 1.5% of
// deliveries went through such snoozes, at p50 418 ms). A hanging
// endpoint's backlog waits once and snoozes from then on. A job whose
// endpoint is answering waits AnsweringPatience instead.
const BusyPatience = 50 * time.Millisecond

// AnsweringPatience is how long a job whose endpoint is answering (its
// latest attempt answered, in this process) waits in the process for room,
// however often it was held back before, and the longest it snoozes while
// the endpoint's requests are quick. An answering endpoint is full because
// it has much to do, not because it hangs: a batch job takes every free
// slot for its up to MaxBatch deliveries, so the next job's slot frees
// when a whole batch has been sent, tens of milliseconds later, and a
// backlog of such jobs (a busy endpoint, a replay) should be worked
// through as fast as the endpoint answers. With BusyPatience and the
// doubling snoozes meant for hanging endpoints, up to MaxBusySnooze, a
// 20,000-event backlog to one endpoint ended at under 100 deliveries/s,
// its last jobs held back eight to ten times in a row (docs/benchmarks.md).
//
// At most as many jobs as the endpoint cap (Config.MaxInflightPerEndpoint)
// wait in one queue (an endpoint's, a tenant's, a share of a tenant's
// cap); a job that finds its queue full is held back at once. An endpoint
// then holds at most its cap of workers with requests and as many
// waiting.
const AnsweringPatience = time.Second

// busyMetadataKey counts, in a job's River metadata, how many times in a
// row the in-flight cap held it back.
const busyMetadataKey = "herald_busy"

// inflight counts the attempts running in this process per endpoint and
// per tenant and refuses one over a cap, so that a slow or dead endpoint
// can hold at most its cap of the worker pool's slots while its requests
// wait for their timeout, and one tenant at most its own cap, whatever its
// endpoints do. The caps are per process because what they protect is the
// process's own worker pool; with N dispatchers a tenant may hold N times
// its cap, never more than its share of each.
//
// Each cap:
//
//   - per endpoint, cap (Config.MaxInflightPerEndpoint) once this process
//     has seen it answer, else 1: an endpoint not tried yet gets one
//     attempt at a time until it answers, so one that hangs from its first
//     request holds one worker, not the cap, and a tenant's new endpoints
//     (at most limits.DefaultMaxEndpoints, 50, by default) hold at most
//     that many of its cap's slots (250 by default) while they are tried;
//     a healthy endpoint's first answer comes within its latency, and
//     releases the jobs waiting for it. Also 1 while the endpoint's
//     breaker is open (health.BreakerThreshold attempts in a row
//     unanswered): one probe at a time. An endpoint that answered and then
//     missed an answer or two keeps its cap: receivers that time out now
//     and then are common, and holding them to one attempt at each miss
//     took the chaos run from 2m37s to 4m43s;
//   - per tenant, tenantCap (Config.MaxInflightPerTenant) unless the
//     tenant has its own (tenants.max_inflight);
//   - within the tenant's cap, its shares (see tenantCaps): the attempts
//     to its suspect endpoints (the latest attempt unanswered, breakers
//     open included) hold at most half of it, and, while one of its
//     endpoints is answering, those to its endpoints that are not (none
//     tried yet, or suspect) at most three quarters, so that however many
//     of its endpoints hang, those that answer keep at least a quarter.
//
// What it knows of an endpoint (its tenant, the tenant's cap, its
// unanswered streak, whether it answered) it learns from each load of one
// of its deliveries and from each attempt it records, so that a job is
// held back before it reads anything when the endpoint or its tenant is
// known to be full.
type inflight struct {
	cap       int
	tenantCap int

	mu sync.Mutex
	// running holds, per endpoint with attempts running, when each began.
	running map[uuid.UUID][]time.Time
	// tenants holds, per tenant with attempts running, how many run and
	// how many of them count against each of its shares.
	tenants map[string]tenantRunning
	// known holds what was last learned of each endpoint.
	known map[uuid.UUID]endpointState
	// answering counts, per tenant, the endpoints of known that are
	// answering.
	answering map[string]int
	// waiting holds, per endpoint (a uuid.UUID), per tenant (a string) or
	// per share of a tenant's cap (a tenantShare), the jobs waiting for
	// room in the order they came: a released slot
	// wakes one of them, not all, so that a slot is not raced for by jobs
	// that would each read their deliveries and all but one be held back.
	waiting map[any][]chan struct{}
	// open counts the endpoints of known whose breaker is open.
	open prometheus.Gauge
}

// tenantRunning is what a tenant has running: all its attempts, those
// begun while their endpoint was not answering and, of those, while it was
// suspect (see endpointState).
type tenantRunning struct {
	attempts, unproven, suspect int
}

// tenantCaps are a tenant's cap on its attempts running at once and its
// shares of it. An endpoint that has not answered may be dead, and a dead
// endpoint's attempt holds its slot until the timeout; a tenant cannot
// tell its dead endpoints from its live ones before they have been tried,
// but it can keep room for those that have answered, so that however many
// of its endpoints hang, those that answer are never held behind them:
//
//   - suspect: the attempts to endpoints whose latest attempt went
//     unanswered, breakers open included, hold at most half of all, at
//     least one, so that endpoints not tried yet can still be found to
//     answer;
//   - unproven: while the tenant has an answering endpoint, the attempts
//     to endpoints that are not (not tried by this process yet, or
//     suspect) hold at most three quarters of all, at least one. A tenant
//     none of whose endpoints has answered has nobody to keep room for.
//
// A quarter carries a tenant's answering endpoints: at the default cap
// (250), 62 slots, over 1,000 attempts a second to receivers that answer
// within 50 ms.
type tenantCaps struct {
	all, unproven, suspect int
}

func capsOf(all int) tenantCaps {
	return tenantCaps{all: all, unproven: max(1, all-all/4), suspect: max(1, all/2)}
}

// endpointState is what inflight learned of an endpoint.
type endpointState struct {
	tenant string
	// tenantCap is the tenant's own cap; 0 means inflight's tenantCap.
	tenantCap int
	// unanswered counts its latest attempts in a row that got no answer.
	unanswered int
	// answering says the latest attempt to it that this process recorded
	// was answered, and none recorded since by any process went
	// unanswered.
	answering bool
	// answered says this process has recorded an answer from it.
	answered bool
}

func (e endpointState) breakerOpen() bool { return e.unanswered >= health.BreakerThreshold }

// suspect says its latest attempt got no answer.
func (e endpointState) suspect() bool { return e.unanswered > 0 }

// tenantShare names the queue of the jobs waiting for room in one share of
// a tenant's cap (tenantCaps): the suspect endpoints' when suspect, else
// the unproven ones'.
type tenantShare struct {
	tenant  string
	suspect bool
}

// attemptClass is which of its tenant's shares an attempt counts against,
// decided when it begins.
type attemptClass struct {
	unproven, suspect bool
}

func classOf(e endpointState) attemptClass {
	return attemptClass{unproven: !e.answering, suspect: e.suspect()}
}

// maxKnown bounds how many endpoints inflight remembers; past it, it
// forgets them all and learns again from the next loads. Forgetting an
// endpoint only delays holding its jobs back until one is loaded.
const maxKnown = 100_000

func newInflight(cap, tenantCap int, open prometheus.Gauge) *inflight {
	return &inflight{
		cap: cap, tenantCap: tenantCap,
		running: make(map[uuid.UUID][]time.Time), tenants: make(map[string]tenantRunning),
		known: make(map[uuid.UUID]endpointState), answering: make(map[string]int),
		waiting: make(map[any][]chan struct{}),
		open:    open,
	}
}

// learn records what a load read of endpoint: its tenant, the tenant's
// own cap (0: none) and the endpoint's unanswered streak. An endpoint this
// process saw answer stays answering while the streak read is zero.
func (f *inflight) learn(endpoint uuid.UUID, tenant string, tenantCap, unanswered int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.known) >= maxKnown {
		if _, ok := f.known[endpoint]; !ok {
			f.known = make(map[uuid.UUID]endpointState)
			f.answering = make(map[string]int)
			f.open.Set(0)
		}
	}
	known := f.known[endpoint]
	answering := known.answering && unanswered == 0
	f.set(endpoint, endpointState{tenant: tenant, tenantCap: tenantCap, unanswered: unanswered, answering: answering, answered: known.answered})
}

// observe records an attempt to endpoint this process recorded: answered
// or not. An answer closes the endpoint's breaker and makes it answering.
// It reports whether the endpoint's cap grew: its first answer here, or one
// that closed its breaker (see Worker.wakeHeld).
func (f *inflight) observe(endpoint uuid.UUID, answered bool) (grew bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.known[endpoint]
	if !ok {
		return false
	}
	before := f.endpointCap(e)
	e.answering = answered
	if answered {
		e.unanswered = 0
		e.answered = true
	} else {
		e.unanswered = min(e.unanswered+1, health.BreakerThreshold)
	}
	f.set(endpoint, e)
	if after := f.endpointCap(e); after > before {
		// Its first answer, or one that closed its breaker: the jobs
		// waiting for it may go.
		f.wake(endpoint, after-before)
		return true
	}
	return false
}

// set stores e for endpoint and keeps the counts of answering endpoints
// and the gauge of open breakers. f.mu must be held.
func (f *inflight) set(endpoint uuid.UUID, e endpointState) {
	old := f.known[endpoint]
	if old.answering {
		if f.answering[old.tenant]--; f.answering[old.tenant] <= 0 {
			delete(f.answering, old.tenant)
		}
	}
	if e.answering {
		f.answering[e.tenant]++
	}
	was := old.breakerOpen()
	f.known[endpoint] = e
	switch {
	case e.breakerOpen() && !was:
		f.open.Inc()
	case !e.breakerOpen() && was:
		f.open.Dec()
	}
}

// limits returns endpoint's cap, what is known of it (its tenant is ""
// when unknown) and its tenant's caps. f.mu must be held.
func (f *inflight) limits(endpoint uuid.UUID) (endpointCap int, e endpointState, caps tenantCaps) {
	e = f.known[endpoint]
	return f.endpointCap(e), e, capsOf(cmp.Or(e.tenantCap, f.tenantCap))
}

// endpointCap returns how many attempts an endpoint known as e may have
// running at once: one until it has answered, and while its breaker is
// open; else the cap.
func (f *inflight) endpointCap(e endpointState) int {
	if !e.answered || e.breakerOpen() {
		return 1
	}
	return f.cap
}

// free returns how many more attempts endpoint may start now, and the
// queue to wait in when none: the endpoint's when it is full, else that
// of its tenant or of the share of its tenant's cap that is. f.mu must be
// held.
func (f *inflight) free(endpoint uuid.UUID) (n int, queue any) {
	endpointCap, e, caps := f.limits(endpoint)
	n = endpointCap - len(f.running[endpoint])
	if n <= 0 || e.tenant == "" {
		return n, endpoint
	}
	t := f.tenants[e.tenant]
	room, queue := caps.all-t.attempts, any(e.tenant)
	class := classOf(e)
	if r := caps.unproven - t.unproven; class.unproven && f.answering[e.tenant] > 0 && r < room {
		room, queue = r, tenantShare{tenant: e.tenant}
	}
	if r := caps.suspect - t.suspect; class.suspect && r < room {
		room, queue = r, tenantShare{tenant: e.tenant, suspect: true}
	}
	if room < n {
		return room, queue
	}
	return n, endpoint
}

// waitForRoom reports whether endpoint and its tenant have room for
// another attempt, waiting up to patience for a slot to be released to
// it unless as many jobs as the endpoint cap wait in its queue already
// (see AnsweringPatience). It reserves nothing: a job uses it to be held
// back before it reads its delivery, and takes its slot after.
func (f *inflight) waitForRoom(ctx context.Context, endpoint uuid.UUID, patience time.Duration) bool {
	f.mu.Lock()
	n, queue := f.free(endpoint)
	if n > 0 {
		f.mu.Unlock()
		return true
	}
	if patience <= 0 || len(f.waiting[queue]) >= f.cap {
		f.mu.Unlock()
		return false
	}
	woken := make(chan struct{})
	f.waiting[queue] = append(f.waiting[queue], woken)
	f.mu.Unlock()

	t := time.NewTimer(patience)
	defer t.Stop()
	select {
	case <-woken:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	waiting := f.waiting[queue]
	if i := slices.Index(waiting, woken); i >= 0 {
		f.setWaiting(queue, slices.Delete(waiting, i, i+1))
		return false
	}
	// Woken as it gave up: the slot goes to the next in line.
	f.wake(queue, 1)
	return false
}

// wake wakes up to n of the jobs waiting for room in queue, first come
// first. f.mu must be held.
func (f *inflight) wake(queue any, n int) {
	waiting := f.waiting[queue]
	n = min(n, len(waiting))
	for _, woken := range waiting[:n] {
		close(woken)
	}
	f.setWaiting(queue, waiting[n:])
}

func (f *inflight) setWaiting(queue any, waiting []chan struct{}) {
	if len(waiting) == 0 {
		delete(f.waiting, queue)
		return
	}
	f.waiting[queue] = waiting
}

// acquireUpTo takes as many slots for endpoint of tenant as are free, at
// most n, and returns how many it took and the function that releases
// them all.
func (f *inflight) acquireUpTo(endpoint uuid.UUID, tenant string, n int) (release func(), got int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.known[endpoint]; !ok || e.tenant != tenant {
		e.tenant = tenant
		f.set(endpoint, e)
	}
	free, _ := f.free(endpoint)
	got = min(n, free)
	if got <= 0 {
		return func() {}, 0
	}
	class := classOf(f.known[endpoint])
	began := time.Now()
	for range got {
		f.running[endpoint] = append(f.running[endpoint], began)
	}
	t := f.tenants[tenant]
	t.attempts += got
	if class.unproven {
		t.unproven += got
	}
	if class.suspect {
		t.suspect += got
	}
	f.tenants[tenant] = t
	return func() { f.release(endpoint, tenant, class, began, got) }, got
}

// release gives back n slots of endpoint, of tenant, taken at began
// counting against the shares of class, and wakes as many of the jobs
// waiting for room at the endpoint, at the tenant and in those shares.
func (f *inflight) release(endpoint uuid.UUID, tenant string, class attemptClass, began time.Time, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wake(endpoint, n)
	f.wake(tenant, n)
	t := f.tenants[tenant]
	t.attempts -= n
	if class.unproven {
		f.wake(tenantShare{tenant: tenant}, n)
		t.unproven -= n
	}
	if class.suspect {
		f.wake(tenantShare{tenant: tenant, suspect: true}, n)
		t.suspect -= n
	}
	if t.attempts <= 0 {
		delete(f.tenants, tenant)
	} else {
		f.tenants[tenant] = t
	}
	running := f.running[endpoint]
	for i := len(running) - 1; i >= 0 && n > 0; i-- {
		if running[i].Equal(began) {
			running = slices.Delete(running, i, i+1)
			n--
		}
	}
	if len(running) == 0 {
		delete(f.running, endpoint)
		return
	}
	f.running[endpoint] = running
}

// breakerOpen reports whether endpoint's breaker is known open.
func (f *inflight) breakerOpen(endpoint uuid.UUID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.known[endpoint].breakerOpen()
}

// isAnswering reports whether endpoint is known to be answering: its
// latest attempt recorded here was answered and none since went unanswered.
func (f *inflight) isAnswering(endpoint uuid.UUID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.known[endpoint]
	return e.answering && !e.suspect()
}

// Answering reports whether endpoint answers: the latest attempt to it this
// worker recorded got a response (any status), and none recorded since by
// any process went unanswered as far as this worker has read. An endpoint
// this worker has not tried yet is not answering.
func (w *Worker) Answering(endpoint uuid.UUID) bool {
	return w.inflight.isAnswering(endpoint)
}

// longestRunning returns how long endpoint's oldest running attempt has been
// running; zero when none is.
func (f *inflight) longestRunning(endpoint uuid.UUID) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var longest time.Duration
	for _, began := range f.running[endpoint] {
		longest = max(longest, time.Since(began))
	}
	return longest
}

// holdBack returns the error that snoozes a job whose endpoint is at its
// cap for busySnooze.
func (w *Worker) holdBack(ctx context.Context, job *rivertype.JobRow, endpoint uuid.UUID) error {
	n := busyCount(job.Metadata)
	if err := river.MetadataSet(ctx, busyMetadataKey, n+1); err != nil {
		return err
	}
	return river.JobSnooze(w.busySnooze(endpoint, n))
}

// MaxWoken bounds how many jobs wakeHeld wakes at an endpoint whose cap
// grew. A healthy endpoint found among many that hang may have had every
// delivery of a timeout's worth of publishing fanned out before its first
// answer (150 in the noisy-tenant-shared benchmark); those past its cap
// are held back again at once and come back within AnsweringPatience. A
// backlog larger than this comes back as its snoozes end.
const MaxWoken = 1000

// wakeHeld makes the jobs held back at each of endpoints, whose cap just
// grew (its first answer in this process, or one that closed its
// breaker), available at once and at River's default priority, at most
// MaxWoken of them each, the longest held first; the jobs of each
// endpoint not yet fetched that the fan-out gave FloodPriority while the
// endpoint was not answering get the default priority too. Snoozed, they
// would have waited out their snooze, up to BreakerSnooze, and then come
// back behind every job of higher priority: in the full-size
// noisy-tenant-shared benchmark the deliveries to the flooding tenant's
// healthy endpoint fanned out before its first answer, at FloodPriority
// among its flood's held-back jobs, arrived 21 s late (docs/benchmarks.md).
// The attempts are recorded already; a failure is logged, and the jobs come
// back when their snoozes end, as before.
func (w *Worker) wakeHeld(ctx context.Context, endpoints []uuid.UUID) {
	for _, endpoint := range endpoints {
		tag, err := w.db.Exec(ctx, wakeHeldJobs, fmt.Sprintf(`{"endpoint_id": %q}`, endpoint), MaxWoken)
		if err != nil {
			w.logger.WarnContext(ctx, "wake the jobs held back at an endpoint that answered: they go when their snoozes end",
				"endpoint_id", endpoint, "error", err)
			continue
		}
		if n := tag.RowsAffected(); n > 0 {
			w.logger.DebugContext(ctx, "woke the jobs held back at an endpoint that answered", "endpoint_id", endpoint, "jobs", n)
		}
	}
}

// busySnooze returns the snooze of a job held back by endpoint's cap n
// times in a row before: a random delay in [d/2, 3d/2), where d doubles
// with each time in a row, is at least as long as the endpoint's oldest
// running attempt has run, and at most MaxBusySnooze; at most
// AnsweringPatience, unless its oldest attempt has run longer, while the
// endpoint answers.
func (w *Worker) busySnooze(endpoint uuid.UUID, n int) time.Duration {
	d, floor, ceiling := w.maxBusySnooze, w.inflight.longestRunning(endpoint), w.maxBusySnooze
	switch {
	case w.inflight.breakerOpen(endpoint):
		// A probe tells within the timeout; until it does, waking the
		// endpoint's backlog more often only costs River round trips.
		floor, ceiling = max(floor, w.timeout), max(ceiling, BreakerSnooze)
	case w.inflight.isAnswering(endpoint):
		ceiling = min(ceiling, max(floor, AnsweringPatience))
	}
	if n < 20 {
		d = FirstBusySnooze << n
	}
	d = min(max(d, floor), ceiling)
	return d/2 + rand.N(d)
}

// BreakerSnooze bounds the delay after which a job held back by its
// endpoint's open breaker (health.BreakerThreshold) tries again, as
// Config.MaxBusySnooze does for the in-flight caps: each such delay is at
// least the HTTP timeout, doubling up to this. A dead endpoint's backlog
// of N jobs then costs about N/BreakerSnooze River round trips a second
// instead of N/MaxBusySnooze, and once a probe is answered its backlog
// goes within BreakerSnooze (times 1.5, the jitter).
const BreakerSnooze = 30 * time.Second

// checkRoom returns nil when job's endpoint has room for another attempt,
// waiting up to its patience, and otherwise the snooze of holdBack. It
// reserves nothing: a job checks before it reads its deliveries, so that a
// hanging endpoint's backlog is held back without reading anything, and
// takes its slots (takeSlots) after. The job's metadata is read only when
// the endpoint is full.
func (w *Worker) checkRoom(ctx context.Context, job *rivertype.JobRow, endpoint uuid.UUID) error {
	if w.inflight.waitForRoom(ctx, endpoint, 0) || w.inflight.waitForRoom(ctx, endpoint, w.patience(job, endpoint)) {
		return nil
	}
	return w.holdBack(ctx, job, endpoint)
}

// patience returns how long job waits in the process for room at
// endpoint: AnsweringPatience while the endpoint answers; BusyPatience
// when the job has not been held back before and the endpoint's breaker is
// closed; else none. Behind an open breaker the slot frees when the probe
// ends, at worst after the timeout: waiting for it would only hold a
// worker.
func (w *Worker) patience(job *rivertype.JobRow, endpoint uuid.UUID) time.Duration {
	switch {
	case w.inflight.isAnswering(endpoint):
		return AnsweringPatience
	case busyCount(job.Metadata) == 0 && !w.inflight.breakerOpen(endpoint):
		return BusyPatience
	}
	return 0
}

// takeSlots takes as many of the in-flight slots of d's endpoint and
// tenant as are free, at most n, for job's requests. It returns how many
// it took, the function that releases them, which may be called more
// than once, and whether it waited for them; when none is free, and none
// frees within AnsweringPatience for an answering endpoint, the snooze of
// holdBack. A job woken by a release can find the slots taken by another
// woken with it (a batch job takes all it can): while the endpoint answers
// it waits again rather than being held back.
//
// A job that waited must look at its deliveries again before it sends
// (stillQueued): a resend or replay during the wait gave them to another
// job.
//
// The slots are held for the requests alone: taken once the deliveries are
// loaded and released once the answers are in. Held across the load and
// the recording, which wait for batches and for the database, they kept
// slots busy long enough under load that healthy endpoints' jobs were held
// back and snoozed for seconds.
func (w *Worker) takeSlots(ctx context.Context, job *rivertype.JobRow, d loaded, n int) (release func(), got int, waited bool, err error) {
	var releaseAll func()
	until := time.Now().Add(AnsweringPatience)
	for {
		releaseAll, got = w.inflight.acquireUpTo(d.endpointID, d.tenantID, n)
		if got > 0 {
			break
		}
		wait := time.Until(until)
		if !w.inflight.isAnswering(d.endpointID) || wait <= 0 || !w.inflight.waitForRoom(ctx, d.endpointID, wait) {
			return nil, 0, false, w.holdBack(ctx, job, d.endpointID)
		}
		waited = true
	}
	release = sync.OnceFunc(releaseAll)
	if err := admitted(ctx, job); err != nil {
		release()
		return nil, 0, false, err
	}
	return release, got, waited, nil
}

// stillQueued returns those of ds that are still pending at generation:
// the deliveries a job that waited for a slot may still send.
func (w *Worker) stillQueued(ctx context.Context, ds []loaded, generation int) ([]loaded, error) {
	rows, err := w.db.Query(ctx, selectStillQueued, idsOf(ds), generation)
	if err != nil {
		return nil, fmt.Errorf("look again at %d deliveries after waiting for a slot: %w", len(ds), err)
	}
	var (
		queued []uuid.UUID
		id     uuid.UUID
		still  bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &still}, func() error {
		if still {
			queued = append(queued, id)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("look again at %d deliveries after waiting for a slot: %w", len(ds), err)
	}
	return slices.DeleteFunc(ds, func(d loaded) bool { return !slices.Contains(queued, d.id) }), nil
}

// admitted clears the count of holdBack once the job got a slot.
func admitted(ctx context.Context, job *rivertype.JobRow) error {
	if busyCount(job.Metadata) == 0 {
		return nil
	}
	return river.MetadataSet(ctx, busyMetadataKey, 0)
}

func busyCount(metadata []byte) int {
	return countIn(metadata, busyMetadataKey)
}
