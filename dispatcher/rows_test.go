package dispatcher_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/migrations"
)

// inserter returns a River client that only inserts jobs, as the API does.
func (b *testBundle) inserter(t *testing.T) *river.Client[pgx.Tx] {
	t.Helper()
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	return client
}

// deliveryRow inserts a delivery of a new, dispatched message to endpoint,
// without a job.
func (b *testBundle) deliveryRow(t *testing.T, endpoint uuid.UUID, status deliverystatus.Status) uuid.UUID {
	t.Helper()
	dispatched := time.Now()
	m := testfactory.Message(t, b.pool, &testfactory.MessageOpts{TenantID: tenant, DispatchedAt: &dispatched})
	return testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: m.ID, EndpointID: endpoint, Status: status}).ID
}
