package health

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/outbox"
)

// The operational event types. Endpoints of the ops tenant subscribe to them
// like to any other type.
const (
	// TypeEndpointFailing is published once per failing spell, when an
	// endpoint has failed for Config.WarnAfter without a success.
	TypeEndpointFailing = "endpoint.failing"
	// TypeEndpointDisabled is published when Herald disables an endpoint:
	// failing for Config.DisableAfter, or a 410 Gone answer.
	TypeEndpointDisabled = "endpoint.disabled"
	// TypeEndpointRecovered is published when an attempt succeeds for an
	// endpoint whose failing spell had been announced.
	TypeEndpointRecovered = "endpoint.recovered"
	// TypeDeliveryExhausted is published when a delivery's retry window is
	// spent without a success.
	TypeDeliveryExhausted = "delivery.exhausted"
	// TypeCertificateExpiring is published once per client certificate,
	// Config.CertificateWarning before it lapses.
	TypeCertificateExpiring = "endpoint.certificate_expiring"
)

// Endpoint identifies the endpoint an operational event is about.
type Endpoint struct {
	ID          uuid.UUID `json:"id"`
	TenantID    string    `json:"tenant_id"`
	URL         string    `json:"url"`
	Description string    `json:"description"`
}

// FailingEvent is the data of endpoint.failing.
type FailingEvent struct {
	Endpoint Endpoint `json:"endpoint"`
	// FailingSince is the first failed attempt after the last success.
	FailingSince time.Time `json:"failing_since"`
	// LastSuccessAt is the last successful attempt ever, null if none.
	LastSuccessAt *time.Time `json:"last_success_at"`
	// LastError describes the attempt that triggered the event.
	LastError string `json:"last_error"`
	// DisableAt is when the endpoint will be disabled if no attempt
	// succeeds before; null when automatic disabling is off.
	DisableAt *time.Time `json:"disable_at"`
}

// DisabledEvent is the data of endpoint.disabled.
type DisabledEvent struct {
	Endpoint Endpoint `json:"endpoint"`
	// Reason is the endpoint's disabled_reason, e.g. "410 Gone".
	Reason     string    `json:"reason"`
	DisabledAt time.Time `json:"disabled_at"`
	// FailingSince is null when the endpoint was disabled by a 410 while
	// it was otherwise healthy.
	FailingSince  *time.Time `json:"failing_since"`
	LastSuccessAt *time.Time `json:"last_success_at"`
}

// RecoveredEvent is the data of endpoint.recovered.
type RecoveredEvent struct {
	Endpoint     Endpoint  `json:"endpoint"`
	FailingSince time.Time `json:"failing_since"`
	RecoveredAt  time.Time `json:"recovered_at"`
}

// ExhaustedEvent is the data of delivery.exhausted.
type ExhaustedEvent struct {
	Endpoint   Endpoint  `json:"endpoint"`
	DeliveryID uuid.UUID `json:"delivery_id"`
	MessageID  uuid.UUID `json:"message_id"`
	// WebhookID is the webhook-id header the message was sent with.
	WebhookID      string     `json:"webhook_id"`
	EventType      string     `json:"event_type"`
	Attempts       int        `json:"attempts"`
	FirstAttemptAt *time.Time `json:"first_attempt_at"`
	LastAttemptAt  *time.Time `json:"last_attempt_at"`
	LastStatusCode *int       `json:"last_status_code"`
	LastError      *string    `json:"last_error"`
}

// CertificateExpiringEvent is the data of endpoint.certificate_expiring.
type CertificateExpiringEvent struct {
	Endpoint Endpoint `json:"endpoint"`
	// Subject is the client certificate's, e.g. "CN=herald".
	Subject string `json:"subject"`
	// ExpiresAt is when it lapses; after it, receivers that require it
	// refuse every delivery.
	ExpiresAt time.Time `json:"expires_at"`
}

// publish puts an operational event in the outbox, in tx, for the ops
// tenant, creating that tenant the first time. The object is the endpoint or
// delivery the event is about, so its versions order the events of one
// endpoint for a receiver's version guard.
func (t *Tracker) publish(ctx context.Context, tx pgx.Tx, about Endpoint, eventType, objectID string, data any) error {
	if about.TenantID == t.cfg.OpsTenant {
		t.cfg.Logger.WarnContext(ctx, "operational event about the ops tenant's own endpoint; logged, not published",
			"type", eventType, "endpoint_id", about.ID)
		return nil
	}
	if _, err := tx.Exec(ctx, ensureOpsTenant, t.cfg.OpsTenant); err != nil {
		return fmt.Errorf("publish %s: create ops tenant %q: %w", eventType, t.cfg.OpsTenant, err)
	}
	_, err := outbox.Publish(ctx, tx, outbox.Message{
		Tenant:   t.cfg.OpsTenant,
		Type:     eventType,
		ObjectID: objectID,
		Data:     data,
	})
	if err != nil {
		return fmt.Errorf("publish %s: %w", eventType, err)
	}
	return nil
}
