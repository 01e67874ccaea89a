package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/outbox"
)

// DefaultMaxBatchBodyBytes caps the body of a batch publish: 16 MiB, room
// for outbox.MaxBatch events of about 16 KiB each.
const DefaultMaxBatchBodyBytes = 16 << 20

type batchRequest struct {
	Events []json.RawMessage `json:"events"`
}

type batchEvent struct {
	EventType      string          `json:"event_type"`
	ObjectID       string          `json:"object_id"`
	Data           json.RawMessage `json:"data"`
	IdempotencyKey *string         `json:"idempotency_key"`
	// Channels label the event (see publishRequest.Channels).
	Channels []string `json:"channels"`
}

// BatchResult is what the batch route answers for one event, in the
// order of the request.
type BatchResult struct {
	Index     int       `json:"index"`
	ID        uuid.UUID `json:"id"`
	EventType string    `json:"event_type"`
	Object    ObjectRef `json:"object"`
	// Duplicate is true for an event whose idempotency_key was published
	// before: nothing was published for it, and ID and Object are the
	// first message's.
	Duplicate bool      `json:"duplicate"`
	CreatedAt time.Time `json:"created_at"`
}

// publishBatch is POST /v1/tenants/{tenantID}/messages/batch: up to
// outbox.MaxBatch events in one statement, all or nothing. A bad event
// fails the whole batch with a 422 listing every bad event by index and
// field; a batch over the limit is a 413.
func (s *Server) publishBatch(w http.ResponseWriter, r *http.Request) error {
	if r.Header.Get(IdempotencyKeyHeader) != "" {
		return invalid(IdempotencyKeyHeader, "a batch takes no Idempotency-Key header; give each event that needs one its own idempotency_key")
	}
	var req batchRequest
	if err := s.decodeLimited(w, r, &req, s.maxBatchBodyBytes); err != nil {
		return err
	}
	switch {
	case req.Events == nil:
		return invalid("events", `events is missing; send {"events": [{"event_type": …, "object_id": …, "data": {…}}, …]}`)
	case len(req.Events) == 0:
		return invalid("events", "events is empty; send at least one event")
	case len(req.Events) > outbox.MaxBatch:
		return problem(http.StatusRequestEntityTooLarge, "batch-too-large", fmt.Sprintf(
			"the batch holds %d events; at most %d are published in one request, so split it", len(req.Events), outbox.MaxBatch))
	}
	tenantID := chi.URLParam(r, "tenantID")
	msgs := make([]outbox.Message, len(req.Events))
	var bad []ItemProblem
	for i, raw := range req.Events {
		m, p := batchMessage(tenantID, i, raw)
		if p != nil {
			bad = append(bad, *p)
			continue
		}
		msgs[i] = m
	}
	if len(bad) > 0 {
		return batchProblem(bad)
	}
	published, err := outbox.PublishManyPool(r.Context(), s.pool, msgs)
	var batch *outbox.BatchError
	if errors.As(err, &batch) {
		for _, item := range batch.Items {
			field := publishField(item.Field)
			bad = append(bad, ItemProblem{Index: item.Index, Field: field, Detail: fmt.Sprintf("events[%d].%s %s", item.Index, field, item.Problem)})
		}
		return batchProblem(bad)
	}
	if err != nil {
		return err
	}
	results := make([]BatchResult, len(published))
	for i, p := range published {
		results[i] = BatchResult{
			Index: i, ID: p.ID, EventType: msgs[i].Type,
			Object:    ObjectRef{ID: msgs[i].ObjectID, Version: p.Version},
			Duplicate: p.Duplicate, CreatedAt: p.CreatedAt,
		}
	}
	return writeJSON(w, http.StatusAccepted, listResponse[BatchResult]{Data: results})
}

// batchMessage decodes the index-th event of a batch.
func batchMessage(tenantID string, index int, raw json.RawMessage) (outbox.Message, *ItemProblem) {
	fail := func(field, detail string) (outbox.Message, *ItemProblem) {
		name := fmt.Sprintf("events[%d]", index)
		if field != "" {
			name += "." + field
		}
		return outbox.Message{}, &ItemProblem{Index: index, Field: field, Detail: name + " " + detail}
	}
	var ev batchEvent
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		p := decodeProblem(err, 0)
		if p.Field != "" {
			return fail(p.Field, strings.TrimPrefix(p.Detail, p.Field+" "))
		}
		return fail("", `must be an object with event_type, object_id, data and, optionally, idempotency_key and channels`)
	}
	if len(ev.Data) == 0 || bytes.Equal(ev.Data, []byte("null")) {
		return fail("data", `is missing; send the event's payload as a JSON object, e.g. "data": {}`)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, ev.Data); err != nil {
		return fail("data", "is not valid JSON")
	}
	m := outbox.Message{Tenant: tenantID, Type: ev.EventType, ObjectID: ev.ObjectID, Data: json.RawMessage(compact.Bytes()), Channels: ev.Channels}
	if ev.IdempotencyKey != nil {
		if p := checkText("idempotency_key", *ev.IdempotencyKey, maxIdempotencyKey); p != nil {
			return fail("idempotency_key", p.Detail[len("idempotency_key "):])
		}
		if *ev.IdempotencyKey == "" {
			return fail("idempotency_key", "is empty; leave it out (or null) for no key")
		}
		m.IdempotencyKey = *ev.IdempotencyKey
	}
	return m, nil
}

// ItemProblem is one bad event of a batch, in a problem's errors.
type ItemProblem struct {
	// Index is the event's position in events, from 0.
	Index int `json:"index"`
	// Field is the event's field at fault; empty when the event itself is
	// not an object.
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

// batchProblem is the 422 for a batch with bad events: the first one in
// detail and field, every one in errors.
func batchProblem(items []ItemProblem) *Problem {
	first := items[0]
	field := fmt.Sprintf("events[%d]", first.Index)
	if first.Field != "" {
		field += "." + first.Field
	}
	detail := first.Detail
	if len(items) > 1 {
		detail += fmt.Sprintf(" (and %d more bad events, listed in errors); nothing was published", len(items)-1)
	} else {
		detail += "; nothing was published"
	}
	p := invalid(field, detail)
	p.Errors = items
	return p
}
