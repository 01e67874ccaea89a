package replay_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/replay"
)

func TestSendTestEventReachesOneEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: "acme", URL: "https://example.com/other"})

	var id uuid.UUID
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		id, err = replay.SendTestEventTx(b.ctx, tx, b.jobs, "acme", b.endpoint)
		return err
	})
	require.NoError(t, err)
	var (
		eventType  string
		dispatched bool
		delivery   uuid.UUID
		endpoint   uuid.UUID
	)
	require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT m.event_type, m.dispatched_at IS NOT NULL, d.id, d.endpoint_id
FROM herald.messages m JOIN herald.deliveries d ON d.message_id = m.id WHERE m.id = $1`, id).
		Scan(&eventType, &dispatched, &delivery, &endpoint))
	require.Equal(t, replay.TestEventType, eventType)
	require.True(t, dispatched, "the dispatcher must not fan it out to the other endpoint")
	require.Equal(t, b.endpoint, endpoint)
	require.Equal(t, []string{"manual"}, b.queued(t, delivery))

	b.exec(t, "UPDATE herald.endpoints SET enabled = false WHERE id = $1", b.endpoint)
	err = pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		_, err := replay.SendTestEventTx(b.ctx, tx, b.jobs, "acme", b.endpoint)
		return err
	})
	require.ErrorIs(t, err, replay.ErrEndpointDisabled)
}
