package delivery

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// firstBusySnooze is the mean delay after which a job held back by its
// endpoint's in-flight cap tries again the first time; each further time in
// a row doubles it, up to Config.MaxBusySnooze. Contention at a healthy
// endpoint clears within a few short snoozes, while the backlog of a hanging
// endpoint soon checks back only every MaxBusySnooze.
const firstBusySnooze = 50 * time.Millisecond

// busyPatience is how long a job that has not been held back before waits
// in the process for its endpoint to have room before it is held back. A
// healthy endpoint reaches its cap only while the machine stalls, and a
// slot frees within milliseconds; a snooze would add at least a River
// round trip and, doubling, hundreds of milliseconds. A hanging endpoint's
// backlog waits once and snoozes from then on.
const busyPatience = 50 * time.Millisecond

// busyMetadataKey counts, in a job's River metadata, how many times in a
// row the in-flight cap held it back.
const busyMetadataKey = "herald_busy"

// inflight counts the attempts running per endpoint in this process and
// refuses one over the cap, so that a slow or dead endpoint can hold at most
// cap of the worker pool's slots while its requests wait for their timeout.
type inflight struct {
	cap int

	mu      sync.Mutex
	running map[uuid.UUID]int
	// freed holds, for an endpoint someone waits on, a channel closed
	// when one of its slots is released.
	freed map[uuid.UUID]chan struct{}
}

func newInflight(cap int) *inflight {
	return &inflight{cap: cap, running: make(map[uuid.UUID]int), freed: make(map[uuid.UUID]chan struct{})}
}

// acquire takes a slot for endpoint and returns its release function, or
// false when the endpoint already has cap attempts running.
func (f *inflight) acquire(endpoint uuid.UUID) (release func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[endpoint] >= f.cap {
		return nil, false
	}
	f.running[endpoint]++
	return func() { f.release(endpoint) }, true
}

// waitForRoom reports whether endpoint has fewer than cap attempts
// running, waiting up to patience for one to end. It reserves nothing: a job
// uses it to be held back before it reads its delivery, and takes its slot
// after.
func (f *inflight) waitForRoom(ctx context.Context, endpoint uuid.UUID, patience time.Duration) bool {
	var deadline <-chan time.Time
	for {
		f.mu.Lock()
		if f.running[endpoint] < f.cap {
			f.mu.Unlock()
			return true
		}
		if patience <= 0 {
			f.mu.Unlock()
			return false
		}
		freed := f.freed[endpoint]
		if freed == nil {
			freed = make(chan struct{})
			f.freed[endpoint] = freed
		}
		f.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(patience)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-freed:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// acquireUpTo takes as many slots for endpoint as are free, at most n, and
// returns how many it took and the function that releases them all.
func (f *inflight) acquireUpTo(endpoint uuid.UUID, n int) (release func(), got int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	got = min(n, f.cap-f.running[endpoint])
	if got <= 0 {
		return func() {}, 0
	}
	f.running[endpoint] += got
	return func() {
		for range got {
			f.release(endpoint)
		}
	}, got
}

func (f *inflight) release(endpoint uuid.UUID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if freed := f.freed[endpoint]; freed != nil {
		close(freed)
		delete(f.freed, endpoint)
	}
	if f.running[endpoint] <= 1 {
		delete(f.running, endpoint)
		return
	}
	f.running[endpoint]--
}

// holdBack returns the error that snoozes a job whose endpoint is at its
// cap: a random delay in [d/2, 3d/2), where d doubles with each time in a
// row the job was held back.
func (w *Worker) holdBack(ctx context.Context, job *rivertype.JobRow) error {
	n := busyCount(job.Metadata)
	if err := river.MetadataSet(ctx, busyMetadataKey, n+1); err != nil {
		return err
	}
	d := w.maxBusySnooze
	if n < 20 {
		d = min(d, firstBusySnooze<<n)
	}
	return river.JobSnooze(d/2 + rand.N(d))
}

// roomFor reports whether job's endpoint has room for it, waiting up to
// busyPatience when the job has not been held back before.
func (w *Worker) roomFor(ctx context.Context, job *rivertype.JobRow, endpoint uuid.UUID) bool {
	patience := busyPatience
	if busyCount(job.Metadata) > 0 {
		patience = 0
	}
	return w.inflight.waitForRoom(ctx, endpoint, patience)
}

// admitted clears the count of holdBack once the job got a slot.
func admitted(ctx context.Context, job *rivertype.JobRow) error {
	if busyCount(job.Metadata) == 0 {
		return nil
	}
	return river.MetadataSet(ctx, busyMetadataKey, 0)
}

func busyCount(metadata []byte) int {
	var m struct {
		Busy int `json:"herald_busy"`
	}
	if json.Unmarshal(metadata, &m) != nil {
		return 0
	}
	return max(m.Busy, 0)
}
