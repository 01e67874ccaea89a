package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/deliverylog"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/outbox"
)

// IdempotencyKeyHeader makes a publish happen at most once per tenant and
// key: a repeat with the same body gets the first response again (with
// IdempotentReplayedHeader set), a different body under the same key a 409.
const IdempotencyKeyHeader = "Idempotency-Key"

// IdempotentReplayedHeader is "true" on a response replayed for a repeated
// Idempotency-Key.
const IdempotentReplayedHeader = "Idempotent-Replayed"

// maxIdempotencyKey is the longest key accepted, as in outbox.Message.
const maxIdempotencyKey = 256

// IdempotencyRetention is how long the first response to a keyed publish
// is kept for repeats. After it a repeat still publishes nothing (the
// outbox keeps every key) and gets the first message back, but a different
// body is no longer told apart.
const IdempotencyRetention = 24 * time.Hour

// pruneEvery spaces the deletions of expired idempotency records made by
// one replica.
const pruneEvery = time.Minute

type publishRequest struct {
	EventType string          `json:"event_type"`
	ObjectID  string          `json:"object_id"`
	Data      json.RawMessage `json:"data"`
	// Channels label the message for routing within its tenant (see
	// outbox.Message.Channels); omitted or empty means none.
	Channels []string `json:"channels,omitempty"`
}

// publish is POST /v1/tenants/{tenantID}/messages: it publishes through the
// outbox in a transaction of its own and answers 202 with the message.
func (s *Server) publish(w http.ResponseWriter, r *http.Request) error {
	var req publishRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Data) == 0 || bytes.Equal(req.Data, []byte("null")) {
		return invalid("data", "data is missing; send the event's payload as a JSON object, e.g. \"data\": {}")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, req.Data); err != nil {
		return invalid("data", "data is not valid JSON")
	}
	req.Data = compact.Bytes()
	key := r.Header.Get(IdempotencyKeyHeader)
	if p := checkText(IdempotencyKeyHeader, key, maxIdempotencyKey); p != nil {
		return p
	}
	tenantID := chi.URLParam(r, "tenantID")

	msg := outbox.Message{
		Tenant:         tenantID,
		Type:           req.EventType,
		ObjectID:       req.ObjectID,
		Data:           req.Data,
		IdempotencyKey: key,
		Channels:       req.Channels,
	}
	if key == "" {
		// One statement, its own transaction: one round trip.
		published, err := outbox.PublishPool(r.Context(), s.pool, msg)
		if err != nil {
			return err
		}
		body, err := json.Marshal(publishedMessage(msg, published))
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		return writeRaw(w, http.StatusAccepted, body)
	}

	// The hash covers what the request asks for, not its formatting, so a
	// retry that re-serializes the same body is still a repeat.
	canonical, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	requestHash := sha256.Sum256(canonical)

	tx, err := s.pool.Begin(r.Context())
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer func() { _ = tx.Rollback(r.Context()) }()

	s.pruneIdempotencyRecords(r)
	// The first request with a key inserts its record; a concurrent
	// repeat waits here for that transaction and then finds the record.
	tag, err := tx.Exec(r.Context(), claimIdempotencyKey, tenantID, key, requestHash[:])
	if err != nil {
		return fmt.Errorf("publish: claim idempotency key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return s.replayIdempotent(w, r, tx, tenantID, key, requestHash[:])
	}
	published, err := outbox.Publish(r.Context(), tx, msg)
	if err != nil {
		return err
	}
	m := publishedMessage(msg, published)
	if published.Duplicate {
		// The key was published before its record expired: answer with
		// the first message as it is now.
		stored, err := deliverylog.GetMessage(r.Context(), tx, tenantID, published.ID)
		if err != nil {
			return fmt.Errorf("publish: read back: %w", err)
		}
		m = messageJSON(stored)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if _, err := tx.Exec(r.Context(), storeIdempotentResponse, tenantID, key, http.StatusAccepted, body); err != nil {
		return fmt.Errorf("publish: store idempotent response: %w", err)
	}
	if err := tx.Commit(r.Context()); err != nil {
		return fmt.Errorf("publish: commit: %w", err)
	}
	return writeRaw(w, http.StatusAccepted, body)
}

// publishedMessage is the API's view of a message msg that was just
// published: not yet dispatched, no deliveries.
func publishedMessage(msg outbox.Message, p outbox.Published) Message {
	m := Message{
		ID: p.ID, TenantID: msg.Tenant, EventType: msg.Type,
		Object:         ObjectRef{ID: msg.ObjectID, Version: p.Version},
		Payload:        p.Body,
		Channels:       sortedChannels(msg.Channels),
		CreatedAt:      p.CreatedAt,
		DeliveryCounts: map[deliverystatus.Status]int{},
	}
	if msg.IdempotencyKey != "" {
		m.IdempotencyKey = &msg.IdempotencyKey
	}
	return m
}

// pruneIdempotencyRecords deletes expired records, at most once per
// pruneEvery in this process. A failure only delays the pruning.
func (s *Server) pruneIdempotencyRecords(r *http.Request) {
	now := time.Now()
	last := s.lastPrune.Load()
	if now.UnixNano()-last < int64(pruneEvery) || !s.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	if _, err := s.pool.Exec(r.Context(), pruneIdempotencyRecords, IdempotencyRetention.Seconds()); err != nil {
		s.logger.WarnContext(r.Context(), "prune idempotency records", "error", err)
	}
}

func (s *Server) replayIdempotent(w http.ResponseWriter, r *http.Request, tx pgx.Tx, tenantID, key string, requestHash []byte) error {
	var (
		storedHash []byte
		status     int
		body       []byte
	)
	if err := tx.QueryRow(r.Context(), selectIdempotencyRecord, tenantID, key).Scan(&storedHash, &status, &body); err != nil {
		return fmt.Errorf("publish: read idempotency record: %w", err)
	}
	if !bytes.Equal(storedHash, requestHash) {
		p := conflict(fmt.Sprintf("the Idempotency-Key %s was already used with a different body; use a new key for a different event", quote(key)))
		p.Field = IdempotencyKeyHeader
		return p
	}
	w.Header().Set(IdempotentReplayedHeader, "true")
	return writeRaw(w, status, body)
}

// publishProblem words the outbox's validation errors with the API's field
// names.
func publishProblem(e *outbox.ValidationError) *Problem {
	field := publishField(e.Field)
	if field == "idempotency_key" {
		field = IdempotencyKeyHeader
	}
	return invalid(field, field+" "+e.Problem)
}

// publishField names an outbox message field as the API's requests do.
func publishField(field string) string {
	switch field {
	case "type":
		return "event_type"
	case "tenant":
		return "tenantID"
	}
	return field
}

func writeRaw(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(append(body, '\n'))
	return err
}
