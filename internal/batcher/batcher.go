// Package batcher lets concurrent callers share round trips. Each call
// queues its request; a flusher takes every request queued (up to
// Config.MaxBatch) and handles them with one call of the flush function.
// Nothing waits on purpose: a request that finds a flusher free goes at
// once, alone, and requests that arrive while all flushers are busy go
// together in the next round trip. Under load this turns a statement and a
// commit per request into one per batch.
//
// Flushers are goroutines started when requests wait and ending when none
// do, so a Batcher needs no starting or stopping.
package batcher

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Config configures a Batcher. Every field is required: the sizes are the
// caller's to choose, since they trade latency, memory and CPU against each
// other in ways only the caller can measure.
type Config struct {
	// MaxBatch is the most requests one call of flush handles. At least 1.
	MaxBatch int
	// Flushers is how many calls of flush may run at once. At least 1; one
	// gives the largest batches.
	Flushers int
	// Timeout bounds one call of flush. Its context is detached from the
	// callers' contexts, so one caller giving up does not fail the others'
	// batch. More than zero.
	Timeout time.Duration
}

// Batcher shares the round trips of flush between concurrent callers.
type Batcher[Req, Res any] struct {
	flush func(ctx context.Context, reqs []Req) ([]Res, error)
	cfg   Config

	mu      sync.Mutex
	pending []*call[Req, Res]
	running int
}

// call is one queued request and, once done is closed, its result.
type call[Req, Res any] struct {
	req  Req
	res  Res
	err  error
	done chan struct{}
}

// New returns a Batcher of flush, which must return one result per
// request, in order, or an error for all of them. It panics when cfg breaks
// a rule of Config: its sizes are constants of the program.
func New[Req, Res any](cfg Config, flush func(ctx context.Context, reqs []Req) ([]Res, error)) *Batcher[Req, Res] {
	if cfg.MaxBatch < 1 || cfg.Flushers < 1 || cfg.Timeout <= 0 {
		panic(fmt.Sprintf("batcher: MaxBatch (%d) and Flushers (%d) must be at least 1 and Timeout (%s) more than zero", cfg.MaxBatch, cfg.Flushers, cfg.Timeout))
	}
	return &Batcher[Req, Res]{flush: flush, cfg: cfg}
}

// Do queues req and waits for its result, or for ctx to end. A request
// whose caller gave up may still be carried out.
func (b *Batcher[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	c := &call[Req, Res]{req: req, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.startFlusher()
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

// DoAll queues every request of reqs and waits for all their results, in
// order, or for ctx to end; it fails if any request failed. The requests go
// in the same round trips as other callers', as many per trip as fit.
func (b *Batcher[Req, Res]) DoAll(ctx context.Context, reqs []Req) ([]Res, error) {
	calls := make([]*call[Req, Res], len(reqs))
	b.mu.Lock()
	for i, req := range reqs {
		calls[i] = &call[Req, Res]{req: req, done: make(chan struct{})}
		b.pending = append(b.pending, calls[i])
	}
	if len(reqs) > 0 {
		b.startFlusher()
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

// startFlusher starts a flusher unless all of them run. b.mu must be held.
func (b *Batcher[Req, Res]) startFlusher() {
	if b.running < b.cfg.Flushers {
		b.running++
		go b.flushAll()
	}
}

// flushAll flushes batches until no request is pending.
func (b *Batcher[Req, Res]) flushAll() {
	for {
		b.mu.Lock()
		n := min(len(b.pending), b.cfg.MaxBatch)
		if n == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		calls := make([]*call[Req, Res], n)
		copy(calls, b.pending)
		b.pending = append(b.pending[:0], b.pending[n:]...)
		b.mu.Unlock()
		b.flushBatch(calls)
	}
}

func (b *Batcher[Req, Res]) flushBatch(calls []*call[Req, Res]) {
	reqs := make([]Req, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Timeout)
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
