package testfactory_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
)

// With no options every factory inserts a valid row, making the rows it
// stands on.
func TestDefaults(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)

	d := testfactory.Delivery(t, pool, nil)
	require.Equal(t, deliverystatus.Pending, d.Status)
	require.Nil(t, d.FirstAttemptAt)
	require.Nil(t, d.CompletedAt)
	var endpointTenant, messageTenant string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT e.tenant_id, m.tenant_id
FROM herald.endpoints e, herald.messages m WHERE e.id = $1 AND m.id = $2`, d.EndpointID, d.MessageID).Scan(&endpointTenant, &messageTenant))
	require.Equal(t, d.TenantID, endpointTenant, "a delivery belongs to its endpoint's tenant")
	require.Equal(t, d.TenantID, messageTenant, "the message made for it too")

	e := testfactory.Endpoint(t, pool, nil)
	require.Equal(t, uuid.Version(7), e.ID.Version())
	require.Equal(t, "https://example.com/hook", e.URL)
	require.Equal(t, []string{}, e.EventTypes)
	require.True(t, e.Enabled)
	require.NotEqual(t, d.TenantID, e.TenantID, "every default tenant is a new one")

	m := testfactory.Message(t, pool, nil)
	require.Equal(t, "invoice.paid", m.EventType)
	require.Equal(t, int64(1), m.ObjectVersion)
	require.Equal(t, "{}", m.Body)
	require.Nil(t, m.DispatchedAt)
	require.WithinDuration(t, time.Now(), m.CreatedAt, time.Minute)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	tx, err := pool.Begin(context.Background())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

	tenant := testfactory.Tenant(t, tx, &testfactory.TenantOpts{ID: "acme", Name: "Acme"})
	require.Equal(t, testfactory.TenantRow{ID: "acme", Name: "Acme", CreatedAt: tenant.CreatedAt}, tenant)
	e := testfactory.Endpoint(t, tx, &testfactory.EndpointOpts{
		TenantID: "acme", URL: "https://hooks.example.com/in", Description: "billing", EventTypes: []string{"invoice.paid"},
	})
	require.Equal(t, "acme", e.TenantID)
	require.Equal(t, "https://hooks.example.com/in", e.URL)
	require.Equal(t, "billing", e.Description)
	require.Equal(t, []string{"invoice.paid"}, e.EventTypes)
	m := testfactory.Message(t, tx, &testfactory.MessageOpts{
		TenantID: "acme", EventType: "invoice.voided", ObjectID: "inv_9", ObjectVersion: 3, Body: `{"a":1}`,
		CreatedAt: &at, DispatchedAt: &at,
	})
	require.Equal(t, testfactory.MessageRow{
		ID: m.ID, TenantID: "acme", EventType: "invoice.voided", ObjectID: "inv_9", ObjectVersion: 3, Body: `{"a":1}`,
		CreatedAt: m.CreatedAt, DispatchedAt: m.DispatchedAt,
	}, m)
	require.True(t, at.Equal(m.CreatedAt))
	require.True(t, at.Equal(*m.DispatchedAt))
	d := testfactory.Delivery(t, tx, &testfactory.DeliveryOpts{
		EndpointID: e.ID, MessageID: m.ID, Status: deliverystatus.Failed, FirstAttemptAt: &at, CompletedAt: &at,
	})
	require.Equal(t, deliverystatus.Failed, d.Status)
	require.Equal(t, "acme", d.TenantID)
	require.True(t, at.Equal(*d.FirstAttemptAt))
	require.True(t, at.Equal(*d.CompletedAt))

	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM herald.tenants").Scan(&n))
	require.Zero(t, n, "rows inserted through a transaction stay in it")
}
