package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/receiver"
	"github.com/heraldhq/herald/signing"
)

// source is the consumer's name for Herald as a sender.
const source = "herald"

// consumerConns is the size of the pool of the consumer's Handler.
const consumerConns = 6

// The consumer's endpoints, by the path of their URL.
const (
	mainPath    = "/webhooks"
	gonePath    = "/gone"
	orderedPath = "/ordered"
)

// consumer is the webhook consumer of a run: receiver's Handler behind the
// fault injector, at its endpoints (see gonePath and orderedPath), storing
// into the inbox that the consumer's worker process applies (see
// workerProcess). It records every request it gets.
type consumer struct {
	pool   *pgxpool.Pool
	inbox  *receiver.Handler
	faults Faults
	seed   uint64
	// patience bounds how long a held request waits for the sender to hang
	// up; it is longer than the sender's timeout.
	patience time.Duration

	deferred float64 // Config.Deferred

	mu        sync.Mutex
	gone      bool // the second endpoint answers 410 Gone
	deferring bool // the first requests of a share deferred of the events are answered 429
	arrivals  []arrival
	requests  map[string]int  // requests per webhook ID so far
	stored    map[string]bool // webhook IDs the inbox has stored
}

// arrival is one request the consumer got.
type arrival struct {
	endpoint  string // the URL's path: mainPath, gonePath or orderedPath
	webhookID string
	timestamp string // the webhook-timestamp header: which attempt this is
	at, end   time.Time
	fault     Fault
	// inbox is the Handler's answer (200 stored, 503 database down), 0 when
	// the fault kept the request from it.
	inbox int
	// duplicate: the inbox already held the event when this copy arrived
	// or was stored.
	duplicate bool
}

// newConsumer returns the consumer of the endpoints whose signing secrets
// are secrets; the second endpoint answers 410 Gone until endGone.
func newConsumer(pool *pgxpool.Pool, secrets []signing.Secret, cfg Config, logger *slog.Logger) (*consumer, error) {
	inbox, err := receiver.NewHandler(pool, source, receiver.VerifyConfig{Secrets: secrets, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &consumer{
		pool:      pool,
		inbox:     inbox,
		faults:    cfg.Faults,
		seed:      cfg.Seed,
		patience:  2*cfg.SenderTimeout + time.Second,
		gone:      cfg.GoneShare > 0,
		deferred:  cfg.Deferred,
		deferring: cfg.Deferred > 0,
		requests:  make(map[string]int),
		stored:    make(map[string]bool),
	}, nil
}

// deferRetryAfter is the Retry-After of a Defer answer.
const deferRetryAfter = 20 * time.Second

// endDeferring stops the 429 answers.
func (c *consumer) endDeferring() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deferring = false
}

// endGone makes the second endpoint answer as the first does.
func (c *consumer) endGone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone = false
}

// migrateConsumer creates the receiver's tables and the consumer's own.
func migrateConsumer(ctx context.Context, pool *pgxpool.Pool) error {
	if err := receiver.Migrate(ctx, pool); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, createConsumerTables); err != nil {
		return fmt.Errorf("create the consumer's tables: %w", err)
	}
	return nil
}

// ServeHTTP draws the request's fault and acts it out around the inbox
// Handler.
func (c *consumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := arrival{endpoint: r.URL.Path, webhookID: r.Header.Get(signing.HeaderID), timestamp: r.Header.Get(signing.HeaderTimestamp), at: time.Now()}
	c.mu.Lock()
	c.requests[a.webhookID]++
	n := c.requests[a.webhookID]
	a.duplicate = c.stored[a.webhookID]
	gone := c.gone && a.endpoint == gonePath
	deferring := c.deferring && a.endpoint == mainPath && n == 1
	c.mu.Unlock()
	a.fault = c.faults.draw(c.seed, a.webhookID, n)
	switch {
	case gone:
		a.fault = Gone
	case deferring && unit(c.seed, "defer", a.webhookID) < c.deferred:
		a.fault = Defer
	}
	defer c.record(&a) // also when Drop aborts the handler

	switch a.fault {
	case Gone:
		http.Error(w, "this endpoint is gone", http.StatusGone)
	case Defer:
		w.Header().Set("Retry-After", strconv.Itoa(int(deferRetryAfter/time.Second)))
		http.Error(w, "come back later", http.StatusTooManyRequests)
	case Fail:
		http.Error(w, "injected failure", http.StatusInternalServerError)
	case Hang:
		c.waitForSender(r)
	case Drop:
		c.store(r, &a)
		panic(http.ErrAbortHandler) // closes the connection without an answer
	case Late:
		rec := c.store(r, &a)
		c.waitForSender(r)
		w.WriteHeader(rec.Code)
	default:
		rec := c.store(r, &a)
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}
}

// store passes the request to the inbox Handler and notes its answer.
func (c *consumer) store(r *http.Request, a *arrival) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	c.inbox.ServeHTTP(rec, r)
	a.inbox = rec.Code
	if rec.Code == http.StatusOK {
		c.mu.Lock()
		a.duplicate = a.duplicate || c.stored[a.webhookID]
		c.stored[a.webhookID] = true
		c.mu.Unlock()
	}
	return rec
}

// waitForSender holds the request until the sender hangs up, which it does
// at its timeout. The body is read first: only then does net/http watch
// the connection and cancel the request's context when the sender closes
// it, so that the request's recorded end is when the sender gave up.
func (c *consumer) waitForSender(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	t := time.NewTimer(c.patience)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
}

func (c *consumer) record(a *arrival) {
	a.end = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arrivals = append(c.arrivals, *a)
}

// storedCount is how many distinct events the inbox has stored.
func (c *consumer) storedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.stored)
}

// requestsSeen returns a copy of the arrivals so far.
func (c *consumer) requestsSeen() []arrival {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]arrival(nil), c.arrivals...)
}

// writeRequests writes every request the consumer got to path, one per
// line, tab-separated, for a look at a run after the fact.
func (c *consumer) writeRequests(path string) error {
	var b strings.Builder
	b.WriteString("endpoint\twebhook_id\twebhook_timestamp\tarrived\tanswered\tfault\tinbox\tduplicate\n")
	for _, a := range c.requestsSeen() {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%t\n", a.endpoint, a.webhookID, a.timestamp,
			a.at.Format(time.RFC3339Nano), a.end.Format(time.RFC3339Nano), a.fault, a.inbox, a.duplicate)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// apply is the consumer's business logic: every application of an event is
// a ledger row (so a second one would show), and the object takes the
// event's state only when its version is newer than the one applied. The
// poison event (the event numbered poison) calls crash instead.
func apply(poison int, crash func()) receiver.HandleFunc {
	return func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
		return applyEvent(ctx, tx, ev, poison, crash)
	}
}

func applyEvent(ctx context.Context, tx pgx.Tx, ev receiver.Event, poison int, crash func()) error {
	var data struct {
		Seq   int64 `json:"seq"`
		Event int   `json:"event"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return fmt.Errorf("event %s: data: %w", ev.WebhookID, err)
	}
	if data.Event == poison {
		crash()
	}
	if _, err := tx.Exec(ctx, insertLedger, ev.WebhookID, ev.ObjectID, ev.Version, data.Seq); err != nil {
		return fmt.Errorf("event %s: ledger: %w", ev.WebhookID, err)
	}
	newer, err := receiver.ApplyIfNewer(ctx, tx, ev.Source, ev.ObjectID, ev.Version)
	if err != nil || !newer {
		return err
	}
	if _, err := tx.Exec(ctx, upsertObject, ev.ObjectID, ev.Version, data.Seq); err != nil {
		return fmt.Errorf("event %s: object %s: %w", ev.WebhookID, ev.ObjectID, err)
	}
	return nil
}
