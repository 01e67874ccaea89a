package bench

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// recorder links the two ends of every delivery: the moment the producer's
// commit returned and the moment a receiver's handler started. Both ends run
// in this process, so their times come from one monotonic clock. The message
// id, which receivers read from the webhook-id header, joins them.
type recorder struct {
	start time.Time

	published atomic.Int64
	// delivered counts the deliveries to measured endpoints that were
	// accepted (a 2xx answered) at least once; received counts every
	// request any endpoint got.
	delivered atomic.Int64
	received  atomic.Int64

	mu      sync.Mutex
	commits map[uuid.UUID]time.Duration
	// transactions are the producers' publishing transactions, when each
	// committed and how long it took.
	transactions []transaction
	arrivals     []arrival
	accepted     map[deliveryKey]bool
}

// transaction is one publishing transaction of the producers.
type transaction struct {
	// at is when its commit returned, since the recorder's start.
	at time.Duration
	// took is from its begin to its commit returning.
	took time.Duration
}

// arrival is one request a receiver got.
type arrival struct {
	message  uuid.UUID
	endpoint int32
	// at is the handler's start, since the recorder's start.
	at time.Duration
	// status is what the receiver answered; 0 for a request it held
	// until the client gave up.
	status int16
	// measured is false for the requests of endpoints whose latency the
	// scenario does not measure (the hanging ones).
	measured bool
}

func newRecorder(start time.Time) *recorder {
	return &recorder{start: start, commits: make(map[uuid.UUID]time.Duration), accepted: make(map[deliveryKey]bool)}
}

// since is t on the recorder's clock.
func (r *recorder) since(t time.Time) time.Duration { return t.Sub(r.start) }

// committed records that the transaction publishing ids committed at t.
func (r *recorder) committed(ids []uuid.UUID, t time.Time) {
	at := r.since(t)
	r.mu.Lock()
	for _, id := range ids {
		r.commits[id] = at
	}
	r.mu.Unlock()
	r.published.Add(int64(len(ids)))
}

// transacted records that a producer's publishing transaction, which
// committed at t, took took from its begin to its commit returning.
func (r *recorder) transacted(t time.Time, took time.Duration) {
	at := r.since(t)
	r.mu.Lock()
	r.transactions = append(r.transactions, transaction{at: at, took: took})
	r.mu.Unlock()
}

// arrived records one request a receiver got.
func (r *recorder) arrived(a arrival) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrivals = append(r.arrivals, a)
	r.received.Add(1)
	if !a.measured || !a.ok() {
		return
	}
	d := deliveryKey{message: a.message, endpoint: a.endpoint}
	if !r.accepted[d] {
		r.accepted[d] = true
		r.delivered.Add(1)
	}
}

// ok reports whether the receiver accepted the request.
func (a arrival) ok() bool { return a.status >= 200 && a.status < 300 }

// recentLatencies returns the commit-to-arrival latencies of the accepted
// requests to measured endpoints that arrived from index from on, and the
// index to pass next time. Progress output uses it.
func (r *recorder) recentLatencies(from int) ([]time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, a := range r.arrivals[from:] {
		if !a.measured || !a.ok() {
			continue
		}
		if c, ok := r.commits[a.message]; ok {
			out = append(out, a.at-c)
		}
	}
	return out, len(r.arrivals)
}

// snapshot returns copies of what was recorded, for the final analysis.
func (r *recorder) snapshot() (map[uuid.UUID]time.Duration, []arrival, []transaction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	commits := make(map[uuid.UUID]time.Duration, len(r.commits))
	for id, at := range r.commits {
		commits[id] = at
	}
	return commits, append([]arrival(nil), r.arrivals...), append([]transaction(nil), r.transactions...)
}
