package deliverylog

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
)

// Delivery is one message's delivery to one endpoint and how it is going.
type Delivery struct {
	ID         uuid.UUID
	MessageID  uuid.UUID
	EndpointID uuid.UUID
	Status     deliverystatus.Status
	// AttemptCount is how many attempts were made.
	AttemptCount   int
	FirstAttemptAt *time.Time
	LastAttemptAt  *time.Time
	// NextAttemptAt is when a pending delivery is due again; nil when it
	// is not waiting for a retry.
	NextAttemptAt *time.Time
	// CompletedAt is when the delivery stopped being pending.
	CompletedAt *time.Time
	// LastStatusCode and LastError are the last attempt's response status
	// and error; nil when it had none.
	LastStatusCode *int
	LastError      *string
	CreatedAt      time.Time
}

// ListDeliveries returns the deliveries of tenantID's message messageID, in
// the order they were created.
func ListDeliveries(ctx context.Context, db DB, tenantID string, messageID uuid.UUID) ([]Delivery, error) {
	rows, err := db.Query(ctx, listDeliveries, tenantID, messageID)
	if err != nil {
		return nil, fmt.Errorf("deliveries of message %s: %w", messageID, err)
	}
	deliveries, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("deliveries of message %s: %w", messageID, err)
	}
	return deliveries, nil
}

// ListedDelivery is a delivery with what a list of deliveries shows beside
// it: the endpoint's URL and the message's event type and publication time.
type ListedDelivery struct {
	Delivery
	EndpointURL string
	EventType   string
	// PublishedAt is when the message was published.
	PublishedAt time.Time
}

// ListDeliveriesOfMessages returns the deliveries of tenantID's messages
// messageIDs, each message's in the order its endpoints were created.
func ListDeliveriesOfMessages(ctx context.Context, db DB, tenantID string, messageIDs []uuid.UUID) ([]ListedDelivery, error) {
	rows, err := db.Query(ctx, listDeliveriesOfMessages, tenantID, messageIDs)
	if err != nil {
		return nil, fmt.Errorf("deliveries of messages: %w", err)
	}
	deliveries, err := pgx.CollectRows(rows, scanListedDelivery)
	if err != nil {
		return nil, fmt.Errorf("deliveries of messages: %w", err)
	}
	return deliveries, nil
}

// ListRecentDeliveries returns the limit newest deliveries to tenantID's
// endpoint endpointID, newest first.
func ListRecentDeliveries(ctx context.Context, db DB, tenantID string, endpointID uuid.UUID, limit int) ([]ListedDelivery, error) {
	rows, err := db.Query(ctx, listRecentDeliveries, tenantID, endpointID, limit)
	if err != nil {
		return nil, fmt.Errorf("recent deliveries of %s: %w", endpointID, err)
	}
	deliveries, err := pgx.CollectRows(rows, scanListedDelivery)
	if err != nil {
		return nil, fmt.Errorf("recent deliveries of %s: %w", endpointID, err)
	}
	return deliveries, nil
}

// GetDelivery returns tenantID's delivery id, or an error wrapping
// ErrNotFound.
func GetDelivery(ctx context.Context, db DB, tenantID string, id uuid.UUID) (Delivery, error) {
	return one(ctx, db, "delivery", selectDelivery, tenantID, id, scanDelivery)
}

func (d *Delivery) fields() []any {
	return []any{&d.ID, &d.MessageID, &d.EndpointID, &d.Status, &d.AttemptCount, &d.FirstAttemptAt,
		&d.LastAttemptAt, &d.NextAttemptAt, &d.CompletedAt, &d.LastStatusCode, &d.LastError, &d.CreatedAt}
}

func scanDelivery(row pgx.CollectableRow) (Delivery, error) {
	var d Delivery
	err := row.Scan(d.fields()...)
	return d, err
}

func scanListedDelivery(row pgx.CollectableRow) (ListedDelivery, error) {
	var d ListedDelivery
	err := row.Scan(append(d.fields(), &d.EndpointURL, &d.EventType, &d.PublishedAt)...)
	return d, err
}
