package sim

import (
	"container/heap"
	"sort"
)

// The delivery plan is laid out in positions: event i is due at position i
// unless a fault moves it. These spacings are the article's.
const (
	// duplicateSpread is how far after its event a duplicate can come.
	duplicateSpread = 200
	// retryMin is how soon after a failed attempt its retry can come. The
	// sender relies on it to keep several deliveries in flight without
	// changing the order of the plan (see sender.dispatch).
	retryMin = 5
	// retrySpread is how far beyond retryMin a retry can come.
	retrySpread = 200
)

// Why a delivery was sent.
const (
	sendFirst           = "first"
	sendFirstConcurrent = "first+concurrent"
	sendDuplicate       = "duplicate"
	sendRetryAfter5xx   = "retry-after-500"
	sendRetryAfterLost  = "retry-after-timeout"
)

// delivery is one scheduled send of an event: Copies requests (2 for a
// concurrent pair) released at the same moment.
type delivery struct {
	at     float64
	order  int // ties on at keep plan order; retries go after what is already due then
	event  *Event
	copies int
	reason string
}

// plan lays out every event's first delivery and its duplicate, if any,
// sorted by position. The faults are keyed by event, so the plan is the
// same for every handler; only retries, which depend on the handler's
// answers, are added while it runs.
func plan(cfg Config, s Stream) []delivery {
	out := make([]delivery, 0, len(s.Events)+len(s.Events)/16)
	for i := range s.Events {
		e := &s.Events[i]
		at := float64(e.Index)
		if keyed(cfg.Seed, e.ID, "shuffle") < cfg.Shuffle {
			at += (keyed(cfg.Seed, e.ID, "shift")*2 - 1) * float64(cfg.ShuffleWindow)
		}
		first := delivery{at: at, event: e, copies: 1, reason: sendFirst}
		if keyed(cfg.Seed, e.ID, "concurrent") < cfg.Concurrent {
			first.copies, first.reason = 2, sendFirstConcurrent
		}
		out = append(out, first)
		if keyed(cfg.Seed, e.ID, "dup") < cfg.Duplicate {
			at := float64(e.Index+1) + keyed(cfg.Seed, e.ID, "dupAt")*duplicateSpread
			out = append(out, delivery{at: at, event: e, copies: 1, reason: sendDuplicate})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].at != out[j].at {
			return out[i].at < out[j].at
		}
		return out[i].event.Index < out[j].event.Index
	})
	for i := range out {
		out[i].order = i
	}
	return out
}

// retryAt is when the sender retries attempt n of e.
func retryAt(cfg Config, from float64, e *Event, n int) float64 {
	return from + retryMin + keyed(cfg.Seed, e.ID, itoa(n), "retryAt")*retrySpread
}

// queue holds the deliveries not sent yet, earliest first.
type queue []delivery

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].order < q[j].order
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(delivery)) }
func (q *queue) Pop() any {
	old := *q
	d := old[len(old)-1]
	*q = old[:len(old)-1]
	return d
}

func newQueue(ds []delivery) *queue {
	q := queue(append([]delivery(nil), ds...))
	heap.Init(&q)
	return &q
}
