package historyfill

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Table tags in the ids idAt makes.
const (
	tagMessage byte = iota + 1
	tagDelivery
	tagAttempt
	tagOwner
)

// The shape of the generated history, per 100 deliveries of the filler's
// own endpoints: 94 succeed at the first attempt, 4 at the second, 1 fails
// after three (its retry window spent), 1 is cancelled after one (its
// endpoint was disabled). One message in idempotencyEvery carries an
// idempotency key; one delivery in replayedEvery of each tenant's first
// endpoint was replayed once; idempotency records are kept for the
// idempotency window. The last pendingTail of the history keeps
// one delivery in a thousand pending, due after the history ends.
const (
	idempotencyEvery = 20
	// idempotencyWindow is how far back idempotency records reach: the API
	// prunes them after a day (api.IdempotencyRetention), once a minute,
	// so the history keeps a day and a little more.
	idempotencyWindow = 24*time.Hour + time.Minute
	replayedEvery     = 10
	pendingTail       = 0.01
)

var eventTypes = []string{"invoice.paid", "invoice.created", "customer.updated", "subscription.renewed", "payment.failed"}

type endpoint struct {
	tenantID string
	id       uuid.UUID
	first    bool // its tenant's first, which has a replay
}

// history generates the rows of a Spec: slot k of total is one message
// with one delivery, at start + span·k/total.
type history struct {
	spec      Spec
	nonce     uint32
	start     time.Time
	total     int
	endpoints []endpoint
	replays   map[string]uuid.UUID // by tenant
}

func newHistory(spec Spec) (*history, error) {
	nonce, err := randomNonce()
	if err != nil {
		return nil, err
	}
	h := &history{spec: spec, nonce: nonce, start: spec.End.Add(-spec.Span), total: spec.Deliveries, replays: map[string]uuid.UUID{}}
	for _, s := range spec.Streams {
		if s.TenantID == "" || s.EndpointID == uuid.Nil || s.Deliveries < 0 {
			return nil, fmt.Errorf("history stream %+v: name an existing tenant and endpoint and a count of zero or more", s)
		}
		h.total += s.Deliveries
	}
	if spec.Deliveries <= 0 {
		spec.Tenants = 0
	}
	for t := range spec.Tenants {
		tenant := fmt.Sprintf("history_%s_%03d", strconv.FormatUint(uint64(nonce), 36), t)
		for e := range spec.EndpointsPerTenant {
			h.endpoints = append(h.endpoints, endpoint{tenantID: tenant, id: idAt(h.start.Add(-time.Hour), nonce, tagOwner, uint64(len(h.endpoints))), first: e == 0})
		}
		h.replays[tenant] = idAt(h.start, nonce, tagOwner, uint64(1<<20+t))
	}
	return h, nil
}

// insertOwners inserts the filler's tenants, endpoints and replays.
func (h *history) insertOwners(ctx context.Context, pool *pgxpool.Pool) error {
	var tenants []string
	var epIDs []uuid.UUID
	var epTenants, epURLs []string
	for _, e := range h.endpoints {
		if e.first {
			tenants = append(tenants, e.tenantID)
		}
		epIDs = append(epIDs, e.id)
		epTenants = append(epTenants, e.tenantID)
		epURLs = append(epURLs, "https://history.invalid/"+e.tenantID+"/"+e.id.String())
	}
	created := h.start.Add(-time.Hour)
	if _, err := pool.Exec(ctx, `INSERT INTO herald.tenants (id, name, created_at) SELECT t, 'history', $2 FROM unnest($1::text[]) t`, tenants, created); err != nil {
		return fmt.Errorf("insert history tenants: %w", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO herald.endpoints (id, tenant_id, url, created_at)
SELECT * , $4::timestamptz FROM unnest($1::uuid[], $2::text[], $3::text[])`, epIDs, epTenants, epURLs, created); err != nil {
		return fmt.Errorf("insert history endpoints: %w", err)
	}
	for _, e := range h.endpoints {
		if !e.first {
			continue
		}
		if _, err := pool.Exec(ctx, `INSERT INTO herald.replays (id, tenant_id, endpoint_id, since_at, until_at, status, total, enqueued, created_at, completed_at)
VALUES ($1, $2, $3, $4, $5, 'completed', 0, 0, $5, $5)`, h.replays[e.tenantID], e.tenantID, e.id, h.start, h.spec.End); err != nil {
			return fmt.Errorf("insert history replay: %w", err)
		}
	}
	return nil
}

// slot is one message and its delivery.
type slot struct {
	k        uint64
	at       time.Time
	tenantID string
	endpoint uuid.UUID
	pattern  int // k % 100; see the constants above
	stream   bool
	first    bool
	round    int // how many times the filler's endpoints had a slot before
}

func (s slot) deliveryID(nonce uint32) uuid.UUID {
	return idAt(s.at, nonce, tagDelivery, s.k)
}

// slots yields every slot in time order. Streams take their slots evenly
// spread (the first due stream takes a slot, the filler's endpoints the
// rest, round robin).
func (h *history) slots() iter.Seq[slot] {
	return func(yield func(slot) bool) {
		emitted := make([]int, len(h.spec.Streams))
		var background int
		step := h.spec.Span / time.Duration(max(h.total, 1))
		for k := range h.total {
			s := slot{k: uint64(k), at: h.start.Add(step * time.Duration(k)), pattern: k % 100}
			taken := false
			for j, st := range h.spec.Streams {
				if emitted[j] < int(int64(k+1)*int64(st.Deliveries)/int64(h.total)) {
					emitted[j]++
					s.tenantID, s.endpoint, s.stream, taken = st.TenantID, st.EndpointID, true, true
					break
				}
			}
			if !taken {
				if len(h.endpoints) == 0 {
					continue
				}
				e := h.endpoints[background%len(h.endpoints)]
				s.tenantID, s.endpoint, s.first, s.round = e.tenantID, e.id, e.first, background/len(h.endpoints)
				background++
			}
			if !yield(s) {
				return
			}
		}
	}
}

func (h *history) messageID(s slot) uuid.UUID { return idAt(s.at, h.nonce, tagMessage, s.k) }

func (h *history) pending(s slot) bool {
	return !s.stream && s.k%1000 == 937 && float64(s.k) >= float64(h.total)*(1-pendingTail)
}

func body(s slot, eventType string) string {
	var b strings.Builder
	b.WriteString(`{"type":"`)
	b.WriteString(eventType)
	b.WriteString(`","timestamp":"`)
	b.WriteString(s.at.UTC().Format(time.RFC3339))
	b.WriteString(`","object":{"id":"obj_`)
	b.WriteString(strconv.FormatUint(s.k%10_000, 10))
	b.WriteString(`","version":`)
	b.WriteString(strconv.FormatUint(s.k/10_000+1, 10))
	b.WriteString(`},"data":{"amount":4200,"currency":"eur","customer":"cus_`)
	b.WriteString(strconv.FormatUint(s.k%997, 10))
	b.WriteString(`","lines":[{"sku":"plan-pro","quantity":1,"unit_amount":4200}],"note":"generated history"}}`)
	return b.String()
}

func (h *history) messages(yield func([]any) bool) {
	for s := range h.slots() {
		et := eventTypes[s.k%uint64(len(eventTypes))]
		var key any
		if s.k%idempotencyEvery == 0 {
			key = "key_" + strconv.FormatUint(s.k, 10)
		}
		if !yield([]any{h.messageID(s), s.tenantID, et, "obj_" + strconv.FormatUint(s.k%10_000, 10), int64(s.k/10_000 + 1),
			body(s, et), key, s.at, s.at.Add(2 * time.Millisecond)}) {
			return
		}
	}
}

// attempt is one generated attempt of a slot's delivery.
type attempt struct {
	at      time.Time
	status  int32
	outcome string
}

// attemptsOf returns the slot's attempts and its delivery's final status.
func (h *history) attemptsOf(s slot) ([]attempt, string) {
	first := s.at.Add(10 * time.Millisecond)
	switch {
	case s.stream || s.pattern < 94:
		if h.pending(s) {
			return []attempt{{first, 503, "retry"}}, "pending"
		}
		return []attempt{{first, 200, "succeeded"}}, "succeeded"
	case s.pattern < 98:
		return []attempt{{first, 503, "retry"}, {first.Add(30 * time.Second), 200, "succeeded"}}, "succeeded"
	case s.pattern == 98:
		return []attempt{{first, 500, "retry"}, {first.Add(time.Minute), 500, "retry"}, {first.Add(3 * time.Minute), 500, "exhausted"}}, "failed"
	default:
		return []attempt{{first, 500, "retry"}}, "cancelled"
	}
}

func (h *history) deliveries(yield func([]any) bool) {
	for s := range h.slots() {
		atts, status := h.attemptsOf(s)
		last := atts[len(atts)-1]
		var next, completed, lastErr any
		switch status {
		case "pending":
			next = h.spec.End.Add(time.Hour)
		case "cancelled":
			completed = last.at.Add(time.Minute)
		default:
			completed = last.at.Add(50 * time.Millisecond)
		}
		if last.status != 200 {
			lastErr = "HTTP " + strconv.Itoa(int(last.status))
		}
		created := s.at.Add(5 * time.Millisecond)
		if !yield([]any{s.deliveryID(h.nonce), h.messageID(s), s.endpoint, s.tenantID, status, int32(len(atts)),
			atts[0].at, last.at, next, completed, last.status, lastErr, created, last.at.Add(50 * time.Millisecond)}) {
			return
		}
	}
}

func (h *history) attempts(yield func([]any) bool) {
	for s := range h.slots() {
		atts, _ := h.attemptsOf(s)
		d, m := s.deliveryID(h.nonce), h.messageID(s)
		for i, a := range atts {
			var problem any
			excerpt := `{"ok":true}`
			if a.status != 200 {
				problem, excerpt = "HTTP "+strconv.Itoa(int(a.status)), "Service Unavailable"
			}
			if !yield([]any{idAt(s.at, h.nonce, tagAttempt, s.k*4+uint64(i)), d, m, s.endpoint, int32(i + 1), "scheduled",
				a.at, int32(20 + s.k%80), a.status, problem, excerpt, a.outcome}) {
				return
			}
		}
	}
}

func (h *history) replayDeliveries(yield func([]any) bool) {
	for s := range h.slots() {
		if s.first && s.round%replayedEvery == 3 && !h.pending(s) {
			if !yield([]any{h.replays[s.tenantID], s.deliveryID(h.nonce)}) {
				return
			}
		}
	}
}

// publishKeys are the publish idempotency keys of the messages that carry
// one, as herald.try_publish_many claims them.
func (h *history) publishKeys(yield func([]any) bool) {
	for s := range h.slots() {
		if s.k%idempotencyEvery != 0 {
			continue
		}
		if !yield([]any{s.tenantID, "key_" + strconv.FormatUint(s.k, 10), h.messageID(s), int64(s.k/10_000 + 1), s.at}) {
			return
		}
	}
}

func (h *history) idempotencyRecords(yield func([]any) bool) {
	hash := make([]byte, 32)
	for s := range h.slots() {
		if s.k%idempotencyEvery != 0 || s.at.Before(h.spec.End.Add(-idempotencyWindow)) {
			continue
		}
		resp := []byte(`{"message_id":"` + h.messageID(s).String() + `"}`)
		if !yield([]any{s.tenantID, "key_" + strconv.FormatUint(s.k, 10), hash, int32(201), resp, s.at}) {
			return
		}
	}
}

// pull is iter.Pull over a sequence of rows.
func pull(rows iter.Seq[[]any]) (func() ([]any, bool), func()) { return iter.Pull(rows) }

func (h *history) replayIDs() []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(h.replays))
	for _, id := range h.replays {
		ids = append(ids, id)
	}
	return ids
}
