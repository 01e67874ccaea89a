package deliverylog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/page"
)

// MessageSummary is a published message without its payload: what a list
// of messages shows.
type MessageSummary struct {
	ID        uuid.UUID
	TenantID  string
	EventType string
	// ObjectID and ObjectVersion name the object the message is about and
	// the version it carries.
	ObjectID      string
	ObjectVersion int64
	// IdempotencyKey is the key the producer published with; nil without
	// one.
	IdempotencyKey *string
	CreatedAt      time.Time
	// DispatchedAt is when the dispatcher fanned the message out to the
	// tenant's endpoints; nil while it is queued.
	DispatchedAt *time.Time
	// Channels are the channels the message was published on; empty (never
	// nil) for none.
	Channels []string
}

// Message is a published message with its payload and how its deliveries
// stand.
type Message struct {
	MessageSummary
	// Payload is the exact JSON body sent on the wire.
	Payload json.RawMessage
	// DeliveryCounts counts the message's deliveries by status; a status
	// no delivery has is absent.
	DeliveryCounts map[deliverystatus.Status]int
}

// MessageFilter selects messages of a tenant. The zero value keeps them
// all.
type MessageFilter struct {
	// EventType keeps messages of that type. Empty means any type.
	EventType string
	// Status keeps messages with at least one delivery in that status.
	// Empty means any.
	Status deliverystatus.Status
	// EndpointID keeps messages with a delivery to that endpoint; with
	// Status, a delivery to that endpoint in that status. Nil means any.
	EndpointID *uuid.UUID
	// Since and Until keep messages created in [Since, Until). Nil leaves
	// that end open.
	Since, Until *time.Time
}

// ScanBudget is how many messages one page of a filtered message list
// reads at most. A filter on event type, delivery status or endpoint is
// checked message by message, newest first; a page that read this many
// without filling up ends early, with fewer rows than asked for (none,
// perhaps) and a Next cursor where the reading stopped. So a page costs the
// same whatever the history holds, and a client pages on while Next is set.
const ScanBudget = 2_000

// ListMessages returns a page of tenantID's messages that pass f, newest
// first, with their payloads and delivery counts. A filtered page may end
// early; see ScanBudget.
func ListMessages(ctx context.Context, db DB, tenantID string, f MessageFilter, req page.Request) (page.Page[Message], error) {
	return listMessagesWith(ctx, db, listMessages, tenantID, f, req, scanMessage, Message.cursor)
}

// listMessagesWith runs query, listMessages or listMessageSummaries.
func listMessagesWith[T any](ctx context.Context, db DB, query, tenantID string, f MessageFilter, req page.Request, scan pgx.RowToFunc[T], key func(T) page.Cursor) (page.Page[T], error) {
	afterTime, afterID, err := after(req)
	if err != nil {
		return page.Page[T]{}, err
	}
	args := []any{tenantID, orNull(f.EventType), orNull(f.Status), f.EndpointID, f.Since, f.Until, afterTime, afterID, req.Size() + 1, ScanBudget}
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return page.Page[T]{}, fmt.Errorf("list messages: %w", err)
	}
	messages, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return page.Page[T]{}, fmt.Errorf("list messages: %w", err)
	}
	pg := page.Trim(req, messages, key)
	if pg.Next != nil || !f.filtersEach() {
		return pg, nil
	}
	// A short page of a filtered list: the walk may have stopped at the
	// budget before the history's end.
	rows, err = db.Query(ctx, walkEnd, tenantID, f.Since, f.Until, afterTime, afterID, ScanBudget)
	if err != nil {
		return page.Page[T]{}, fmt.Errorf("list messages: %w", err)
	}
	ends, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		At time.Time
		ID uuid.UUID
	}])
	if err != nil {
		return page.Page[T]{}, fmt.Errorf("list messages: %w", err)
	}
	if len(ends) == 1 {
		pg.Next = &page.Cursor{CreatedAt: ends[0].At, ID: ends[0].ID.String()}
	}
	return pg, nil
}

// filtersEach reports whether f keeps messages by checking each one, so
// that a page may end at ScanBudget.
func (f MessageFilter) filtersEach() bool {
	return f.EventType != "" || f.Status != "" || f.EndpointID != nil
}

// ListMessageSummaries is ListMessages without the payloads and delivery
// counts, for a list that shows neither: a payload may be 256 KiB. A
// filtered page may end early; see ScanBudget.
func ListMessageSummaries(ctx context.Context, db DB, tenantID string, f MessageFilter, req page.Request) (page.Page[MessageSummary], error) {
	return listMessagesWith(ctx, db, listMessageSummaries, tenantID, f, req, func(row pgx.CollectableRow) (MessageSummary, error) {
		var m MessageSummary
		err := row.Scan(m.fields()...)
		return m, err
	}, MessageSummary.cursor)
}

// GetMessage returns tenantID's message id, or an error wrapping
// ErrNotFound.
func GetMessage(ctx context.Context, db DB, tenantID string, id uuid.UUID) (Message, error) {
	return one(ctx, db, "message", selectMessage, tenantID, id, scanMessage)
}

func (m MessageSummary) cursor() page.Cursor {
	return page.Cursor{CreatedAt: m.CreatedAt, ID: m.ID.String()}
}

func (m *MessageSummary) fields() []any {
	return []any{&m.ID, &m.TenantID, &m.EventType, &m.ObjectID, &m.ObjectVersion,
		&m.IdempotencyKey, &m.CreatedAt, &m.DispatchedAt, &m.Channels}
}

func scanMessage(row pgx.CollectableRow) (Message, error) {
	var m Message
	var body string
	err := row.Scan(append(m.fields(), &body, &m.DeliveryCounts)...)
	m.Payload = json.RawMessage(body)
	return m, err
}
