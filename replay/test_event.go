package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/outbox"
)

// TestEventType is the type of the event SendTestEventTx publishes.
const TestEventType = "herald.test"

// SendTestEventTx publishes a herald.test event in tenantID's name and sends
// it to endpointID only: the message is marked dispatched, so the dispatcher
// does not fan it out to the tenant's other endpoints, and one delivery is
// queued with the trigger "manual". It returns the message's id. The API's
// and the portal's "send test event" both call it; its errors are those of
// outbox.Publish and ResendTx.
func SendTestEventTx(ctx context.Context, tx pgx.Tx, jobs Inserter, tenantID string, endpointID uuid.UUID) (uuid.UUID, error) {
	published, err := outbox.Publish(ctx, tx, outbox.Message{
		Tenant:   tenantID,
		Type:     TestEventType,
		ObjectID: "endpoint_" + endpointID.String(),
		Data:     map[string]any{"message": "This is a test event from Herald.", "endpoint_id": endpointID},
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("send test event to endpoint %s: %w", endpointID, err)
	}
	if err := MarkDispatchedTx(ctx, tx, published.ID, time.Now()); err != nil {
		return uuid.Nil, err
	}
	if _, err := ResendTx(ctx, tx, jobs, published.ID, endpointID); err != nil {
		return uuid.Nil, err
	}
	return published.ID, nil
}
