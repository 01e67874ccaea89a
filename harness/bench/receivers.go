package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// behaviour is how one receiver endpoint answers.
type behaviour int

const (
	// answerOK answers 200 at once (after failing first attempts, if the
	// scenario says so).
	answerOK behaviour = iota
	// hangUntilTimeout holds every request until the client gives up (or
	// the receivers are released at the end of the run).
	hangUntilTimeout
)

// endpointSpec is how one endpoint answers and whether its deliveries are
// measured.
type endpointSpec struct {
	behaviour behaviour
	measured  bool
}

// receivers are the webhook endpoints of one run: one loopback listener
// per endpoint, so that each endpoint is its own host:port to the
// dispatcher's HTTP client, as separate customers would be.
type receivers struct {
	rec       *recorder
	endpoints []endpointSpec
	// failFirst is the probability that a delivery's first attempt is
	// answered 500.
	failFirst float64

	server    *http.Server
	listeners []net.Listener
	urls      []string
	release   chan struct{}
	released  sync.Once
	served    sync.WaitGroup

	mu   sync.Mutex
	seen map[deliveryKey]bool
}

// deliveryKey names one (message, endpoint) pair.
type deliveryKey struct {
	message  uuid.UUID
	endpoint int32
}

// startReceivers listens on 127.0.0.1 once per endpoint and serves until
// close.
func startReceivers(rec *recorder, endpoints []endpointSpec, failFirst float64) (*receivers, error) {
	r := &receivers{
		rec:       rec,
		endpoints: endpoints,
		failFirst: failFirst,
		release:   make(chan struct{}),
		seen:      make(map[deliveryKey]bool),
	}
	r.server = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	for i := range endpoints {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			r.close()
			return nil, fmt.Errorf("receiver %d: listen on loopback: %w", i, err)
		}
		r.listeners = append(r.listeners, l)
		r.urls = append(r.urls, fmt.Sprintf("http://%s/%d", l.Addr(), i))
	}
	for _, l := range r.listeners {
		r.served.Add(1)
		go func() {
			defer r.served.Done()
			_ = r.server.Serve(l)
		}()
	}
	return r, nil
}

func (r *receivers) serve(w http.ResponseWriter, req *http.Request) {
	at := r.rec.since(time.Now())
	index, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/"))
	if err != nil || index < 0 || index >= len(r.endpoints) {
		http.Error(w, "no such bench endpoint", http.StatusNotFound)
		return
	}
	message, err := uuid.Parse(strings.TrimPrefix(req.Header.Get("webhook-id"), "msg_"))
	if err != nil {
		http.Error(w, "webhook-id is not msg_<uuid>", http.StatusBadRequest)
		return
	}
	// Reading the body lets the connection be reused.
	_, _ = io.Copy(io.Discard, req.Body)
	spec := r.endpoints[index]
	a := arrival{message: message, endpoint: int32(index), at: at, measured: spec.measured}

	if spec.behaviour == hangUntilTimeout {
		r.rec.arrived(a)
		select {
		case <-req.Context().Done():
		case <-r.release:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	a.status = http.StatusOK
	if r.failFirst > 0 && r.firstAttempt(deliveryKey{message: message, endpoint: a.endpoint}) && rand.Float64() < r.failFirst {
		a.status = http.StatusInternalServerError
	}
	r.rec.arrived(a)
	w.WriteHeader(int(a.status))
}

// firstAttempt reports whether d arrives for the first time.
func (r *receivers) firstAttempt(d deliveryKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[d] {
		return false
	}
	r.seen[d] = true
	return true
}

// releaseHanging answers the requests the hanging endpoints hold, and every
// later one at once, so that a stopping dispatcher need not wait for its
// timeout.
func (r *receivers) releaseHanging() {
	r.released.Do(func() { close(r.release) })
}

// close stops the listeners and closes every connection. It runs after the
// dispatcher stopped, so no request that matters is in flight; a graceful
// Shutdown would wait 5 s for connections the client opened but never used.
func (r *receivers) close() {
	r.releaseHanging()
	_ = r.server.Close()
	for _, l := range r.listeners {
		_ = l.Close()
	}
	r.served.Wait()
}
