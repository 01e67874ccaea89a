package sim

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/heraldhq/herald/signing"
)

// sender plays the provider: it sends the plan to one handler over HTTP,
// signed, several deliveries in flight at once, and retries what failed.
//
// Which delivery goes next follows the plan exactly as a one-at-a-time
// sender would: deliveries leave in order of position, and a failed
// attempt's retry is due at least retryMin positions later. The sender
// starts a delivery as soon as no delivery still in flight could schedule
// a retry before it, so at any moment the deliveries of about retryMin
// positions are racing each other in the handler, and the attempt numbers,
// hence the fault draws, are the same for every handler.
type sender struct {
	cfg    Config
	client *http.Client
	url    string
	secret signing.Secret
	// observe, if set, sees every attempt's outcome, in the sender's
	// goroutine, after the attempt completed.
	observe func(d delivery, attempt, status int, lost bool)
}

type sendTotals struct {
	deliveries int // requests sent and answered
	errors     int // answered with a 5xx
	peak       int // most requests in flight at once
}

// sent is a delivery's outcome: one status per copy.
type sent struct {
	slot     int
	d        delivery
	attempts []int
	statuses []int
	err      error
}

// run delivers ds and every retry they lead to, and returns when nothing is
// left to send. It stops at the first request that gets no answer or an
// answer other than 2xx or 5xx, which means the setup is broken.
func (s *sender) run(ctx context.Context, ds []delivery) (sendTotals, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		totals   sendTotals
		failed   error
		q        = newQueue(ds)
		attempts = make(map[string]int)
		inFlight = make(map[int]float64) // slot → position
		requests = 0                     // copies in flight
		done     = make(chan sent)
		order    = len(ds)
		slot     = 0
	)
	for q.Len() > 0 || len(inFlight) > 0 {
		if failed == nil && q.Len() > 0 && s.mayStart((*q)[0].at, inFlight) {
			d := heap.Pop(q).(delivery)
			ns := make([]int, d.copies)
			for i := range ns {
				attempts[d.event.ID]++
				ns[i] = attempts[d.event.ID]
			}
			inFlight[slot] = d.at
			requests += d.copies
			totals.peak = max(totals.peak, requests)
			go s.send(ctx, slot, d, ns, done)
			slot++
			continue
		}
		if len(inFlight) == 0 {
			break // failed: nothing more will be sent
		}
		r := <-done
		delete(inFlight, r.slot)
		requests -= r.d.copies
		if r.err != nil {
			if failed == nil {
				failed = r.err
				cancel()
			}
			continue
		}
		for i, n := range r.attempts {
			totals.deliveries++
			status, lost := r.statuses[i], false
			switch {
			case status >= 500:
				totals.errors++
				heap.Push(q, delivery{at: retryAt(s.cfg, r.d.at, r.d.event, n), order: order, event: r.d.event, copies: 1, reason: sendRetryAfter5xx})
				order++
			case keyed(s.cfg.Seed, r.d.event.ID, itoa(n), "ackLost") < s.cfg.LostResponse:
				lost = true
				heap.Push(q, delivery{at: retryAt(s.cfg, r.d.at, r.d.event, n), order: order, event: r.d.event, copies: 1, reason: sendRetryAfterLost})
				order++
			}
			if s.observe != nil {
				s.observe(r.d, n, status, lost)
			}
		}
	}
	return totals, failed
}

// mayStart reports whether a delivery at position at can leave now: no
// delivery in flight may be able to schedule a retry before it.
func (s *sender) mayStart(at float64, inFlight map[int]float64) bool {
	if s.cfg.MaxInFlight > 0 && len(inFlight) >= s.cfg.MaxInFlight {
		return false
	}
	for _, busy := range inFlight {
		if at > busy+retryMin {
			return false
		}
	}
	return true
}

// send posts every copy of d at the same moment and reports on done.
func (s *sender) send(ctx context.Context, slot int, d delivery, attempts []int, done chan<- sent) {
	r := sent{slot: slot, d: d, attempts: attempts, statuses: make([]int, len(attempts))}
	body, err := encode(d.event)
	if err != nil {
		r.err = err
		done <- r
		return
	}
	errs := make([]error, len(attempts))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, n := range attempts {
		wg.Go(func() {
			<-start
			r.statuses[i], errs[i] = s.post(ctx, d.event.ID, n, body)
		})
	}
	close(start)
	wg.Wait()
	r.err = errors.Join(errs...)
	done <- r
}

// post sends one attempt and returns the status: 2xx and 5xx are the
// handler's answers, anything else is an error.
func (s *sender) post(ctx context.Context, id string, attempt int, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("deliver %s attempt %d: %w", id, attempt, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := signing.SignHeaders(req.Header, id, time.Now(), body, s.secret); err != nil {
		return 0, fmt.Errorf("deliver %s attempt %d: %w", id, attempt, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("deliver %s attempt %d: %w", id, attempt, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode/100 != 2 && resp.StatusCode/100 != 5 {
		return 0, fmt.Errorf("deliver %s attempt %d: handler answered %d: %s", id, attempt, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return resp.StatusCode, nil
}
