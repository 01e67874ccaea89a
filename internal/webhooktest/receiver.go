// Package webhooktest is the receiving side of delivery tests: an HTTP
// receiver on loopback that records every request and answers as the test
// scripts it.
package webhooktest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Request is one request a Receiver got.
type Request struct {
	Header   http.Header
	Body     []byte
	Received time.Time
	// RemoteAddr is the address the request's connection came from.
	RemoteAddr string
}

// Responder answers the n-th request (1-based) a Receiver got.
type Responder func(n int, w http.ResponseWriter, r *http.Request)

// Status answers the n-th request with codes[n-1], and every request after
// the last code with the last code.
func Status(codes ...int) Responder {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(codes[min(n, len(codes))-1])
	}
}

// Hang answers no request: it holds each one until the client gives up.
func Hang() Responder {
	return func(_ int, _ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}
}

// Receiver is an HTTP server on loopback that records requests.
type Receiver struct {
	// URL is where the receiver listens.
	URL string

	respond Responder

	mu       sync.Mutex
	requests []Request
	inflight int
	peak     int
}

// NewReceiver starts a Receiver answering with respond; it is closed when
// the test ends.
func NewReceiver(t testing.TB, respond Responder) *Receiver {
	t.Helper()
	r := &Receiver{respond: respond}
	server := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(server.Close)
	r.URL = server.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, Request{Header: req.Header.Clone(), Body: body, Received: time.Now(), RemoteAddr: req.RemoteAddr})
	n := len(r.requests)
	r.inflight++
	r.peak = max(r.peak, r.inflight)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inflight--
		r.mu.Unlock()
	}()
	r.respond(n, w, req)
}

// Requests returns the requests received so far, in arrival order.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Count returns how many requests arrived so far.
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

// Inflight returns how many requests the receiver holds right now.
func (r *Receiver) Inflight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inflight
}

// PeakInflight returns the most requests the receiver held at once.
func (r *Receiver) PeakInflight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak
}
