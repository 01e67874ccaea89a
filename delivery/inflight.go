package delivery

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
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
// endpoint's backlog waits once and snoozes from then on.
const BusyPatience = 50 * time.Millisecond

// busyMetadataKey counts, in a job's River metadata, how many times in a
// row the in-flight cap held it back.
const busyMetadataKey = "herald_busy"

// inflight counts the attempts running per endpoint in this process and
// refuses one over the cap, so that a slow or dead endpoint can hold at most
// cap of the worker pool's slots while its requests wait for their timeout.
type inflight struct {
	cap int

	mu sync.Mutex
	// running holds, per endpoint with attempts running, when each began.
	running map[uuid.UUID][]time.Time
	// waiting holds, per endpoint, the jobs waiting for room in the order
	// they came: a released slot wakes one of them, not all, so that a
	// slot is not raced for by jobs that would each read their deliveries
	// and all but one be held back.
	waiting map[uuid.UUID][]chan struct{}
}

func newInflight(cap int) *inflight {
	return &inflight{cap: cap, running: make(map[uuid.UUID][]time.Time), waiting: make(map[uuid.UUID][]chan struct{})}
}

// waitForRoom reports whether endpoint has fewer than cap attempts
// running, waiting up to patience for a slot to be released to it. It
// reserves nothing: a job uses it to be held back before it reads its
// delivery, and takes its slot after.
func (f *inflight) waitForRoom(ctx context.Context, endpoint uuid.UUID, patience time.Duration) bool {
	f.mu.Lock()
	if len(f.running[endpoint]) < f.cap {
		f.mu.Unlock()
		return true
	}
	if patience <= 0 {
		f.mu.Unlock()
		return false
	}
	woken := make(chan struct{})
	f.waiting[endpoint] = append(f.waiting[endpoint], woken)
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
	queue := f.waiting[endpoint]
	if i := slices.Index(queue, woken); i >= 0 {
		f.setWaiting(endpoint, slices.Delete(queue, i, i+1))
		return false
	}
	// Woken as it gave up: the slot goes to the next in line.
	f.wake(endpoint, 1)
	return false
}

// wake wakes up to n of the jobs waiting for room at endpoint, first come
// first. f.mu must be held.
func (f *inflight) wake(endpoint uuid.UUID, n int) {
	queue := f.waiting[endpoint]
	n = min(n, len(queue))
	for _, woken := range queue[:n] {
		close(woken)
	}
	f.setWaiting(endpoint, queue[n:])
}

func (f *inflight) setWaiting(endpoint uuid.UUID, queue []chan struct{}) {
	if len(queue) == 0 {
		delete(f.waiting, endpoint)
		return
	}
	f.waiting[endpoint] = queue
}

// acquireUpTo takes as many slots for endpoint as are free, at most n, and
// returns how many it took and the function that releases them all.
func (f *inflight) acquireUpTo(endpoint uuid.UUID, n int) (release func(), got int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	got = min(n, f.cap-len(f.running[endpoint]))
	if got <= 0 {
		return func() {}, 0
	}
	began := time.Now()
	for range got {
		f.running[endpoint] = append(f.running[endpoint], began)
	}
	return func() { f.release(endpoint, began, got) }, got
}

// release gives back n slots of endpoint taken at began, and wakes as
// many of the jobs waiting for room.
func (f *inflight) release(endpoint uuid.UUID, began time.Time, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wake(endpoint, n)
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
// cap: a random delay in [d/2, 3d/2), where d doubles with each time in a
// row the job was held back, is at least as long as the endpoint's oldest
// running attempt has run, and at most MaxBusySnooze.
func (w *Worker) holdBack(ctx context.Context, job *rivertype.JobRow, endpoint uuid.UUID) error {
	n := busyCount(job.Metadata)
	if err := river.MetadataSet(ctx, busyMetadataKey, n+1); err != nil {
		return err
	}
	d := w.maxBusySnooze
	if n < 20 {
		d = FirstBusySnooze << n
	}
	d = min(max(d, w.inflight.longestRunning(endpoint)), w.maxBusySnooze)
	return river.JobSnooze(d/2 + rand.N(d))
}

// checkRoom returns nil when job's endpoint has room for another attempt,
// waiting up to BusyPatience when the job has not been held back before,
// and otherwise the snooze of holdBack. It reserves nothing: a job checks
// before it reads its deliveries, so that a hanging endpoint's backlog is
// held back without reading anything, and takes its slots (takeSlots)
// after. The job's metadata is read only when the endpoint is full.
func (w *Worker) checkRoom(ctx context.Context, job *rivertype.JobRow, endpoint uuid.UUID) error {
	if w.inflight.waitForRoom(ctx, endpoint, 0) {
		return nil
	}
	if busyCount(job.Metadata) == 0 && w.inflight.waitForRoom(ctx, endpoint, BusyPatience) {
		return nil
	}
	return w.holdBack(ctx, job, endpoint)
}

// takeSlots takes as many of endpoint's in-flight slots as are free, at
// most n, for job's requests. It returns how many it took and the function
// that releases them, which may be called more than once; when none is
// free, the snooze of holdBack.
//
// The slots are held for the requests alone: taken once the deliveries are
// loaded and released once the answers are in. Held across the load and
// the recording, which wait for batches and for the database, they kept
// slots busy long enough under load that healthy endpoints' jobs were held
// back and snoozed for seconds.
func (w *Worker) takeSlots(ctx context.Context, job *rivertype.JobRow, endpoint uuid.UUID, n int) (release func(), got int, err error) {
	releaseAll, got := w.inflight.acquireUpTo(endpoint, n)
	if got == 0 {
		return nil, 0, w.holdBack(ctx, job, endpoint)
	}
	release = sync.OnceFunc(releaseAll)
	if err := admitted(ctx, job); err != nil {
		release()
		return nil, 0, err
	}
	return release, got, nil
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
