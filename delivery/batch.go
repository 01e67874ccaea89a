package delivery

import (
	"context"
	"sync"
	"time"
)

// Defaults of batcher.
const (
	// batchMax is the most requests one round trip carries. Workers waiting
	// for their successes to be recorded hold their deliveries: in the
	// burst benchmark, at 128 per round trip the queue of batch jobs
	// waiting to record took the dispatcher to 240 MB, at 512 to about
	// 100 MB, and the drain was faster.
	batchMax = 512
	// batchFlushers is how many round trips of one kind may run at once.
	// One gives the largest batches: in the steady benchmark four cost 15%
	// more CPU per delivery than one, for no gain in throughput.
	batchFlushers = 1
	// batchTimeout bounds one round trip. It is detached from the callers'
	// contexts: one job being cancelled must not fail the others' batch.
	batchTimeout = 30 * time.Second
)

// batcher lets concurrent workers share database round trips. Each call
// queues its request; a flusher takes every request queued (up to max) and
// handles them with one call of flush. Nothing waits on purpose: a request
// that finds a flusher free goes at once, alone, and requests that arrive
// while all flushers are busy go together in the next round trip. Under load
// this turns a statement and a commit per delivery into one per batch.
//
// Flushers are goroutines started when requests wait and ending when none
// do, so a batcher needs no starting or stopping.
type batcher[Req, Res any] struct {
	flush    func(ctx context.Context, reqs []Req) ([]Res, error)
	max      int
	flushers int

	mu      sync.Mutex
	pending []*batchCall[Req, Res]
	running int
}

// batchCall is one queued request and, once done is closed, its result.
type batchCall[Req, Res any] struct {
	req  Req
	res  Res
	err  error
	done chan struct{}
}

// newBatcher returns a batcher of flush, which must return one result per
// request, in order, or an error for all of them.
func newBatcher[Req, Res any](flush func(ctx context.Context, reqs []Req) ([]Res, error)) *batcher[Req, Res] {
	return &batcher[Req, Res]{flush: flush, max: batchMax, flushers: batchFlushers}
}

// do queues req and waits for its result, or for ctx to end. A request
// whose caller gave up may still be carried out.
func (b *batcher[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	c := &batchCall[Req, Res]{req: req, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if b.running < b.flushers {
		b.running++
		go b.flushAll()
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

// doAll queues every request of reqs and waits for all their results, in
// order, or for ctx to end; it fails if any request failed. The requests go
// in the same round trips as other callers', as many per trip as fit.
func (b *batcher[Req, Res]) doAll(ctx context.Context, reqs []Req) ([]Res, error) {
	calls := make([]*batchCall[Req, Res], len(reqs))
	b.mu.Lock()
	for i, req := range reqs {
		calls[i] = &batchCall[Req, Res]{req: req, done: make(chan struct{})}
		b.pending = append(b.pending, calls[i])
	}
	if len(reqs) > 0 && b.running < b.flushers {
		b.running++
		go b.flushAll()
	}
	b.mu.Unlock()
	out := make([]Res, len(reqs))
	for i, c := range calls {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.err != nil {
			return nil, c.err
		}
		out[i] = c.res
	}
	return out, nil
}

// flushAll flushes batches until no request is pending.
func (b *batcher[Req, Res]) flushAll() {
	for {
		b.mu.Lock()
		n := min(len(b.pending), b.max)
		if n == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		calls := make([]*batchCall[Req, Res], n)
		copy(calls, b.pending)
		b.pending = append(b.pending[:0], b.pending[n:]...)
		b.mu.Unlock()
		b.flushBatch(calls)
	}
}

func (b *batcher[Req, Res]) flushBatch(calls []*batchCall[Req, Res]) {
	reqs := make([]Req, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	res, err := b.flush(ctx, reqs)
	for i, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.res = res[i]
		}
		close(c.done)
	}
}
