// Package testfactory inserts the rows tests stand on (tenants, endpoints,
// messages, deliveries) with plain SQL, after River's testfactory: each
// function takes the test, a pool or transaction and an options struct
// whose zero value (or nil) gives a valid row, and returns the row as
// inserted.
//
//	endpoint := testfactory.Endpoint(t, pool, &testfactory.EndpointOpts{TenantID: "acme"})
//	message := testfactory.Message(t, pool, &testfactory.MessageOpts{TenantID: "acme"})
//	testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{
//		MessageID: message.ID, EndpointID: endpoint.ID, Status: deliverystatus.Failed,
//	})
//
// The rows bypass the product's code on purpose: a test of the store or of
// the outbox does not depend on another part working to get its setup.
// They therefore carry none of what that code adds: an endpoint from here
// has no signing secret, and a message does not bump its object's version.
// Tests that need those go through store.Store and outbox.Publish.
package testfactory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/historyid"
)

// DB is what the factories insert through: a *pgxpool.Pool, a pgx.Tx or a
// *pgx.Conn.
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// TenantOpts are a tenant's columns.
type TenantOpts struct {
	// ID defaults to a fresh "tenant_<n>".
	ID string
	// Name defaults to empty.
	Name string
}

// TenantRow is an inserted tenant.
type TenantRow struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// Tenant inserts a tenant.
func Tenant(tb testing.TB, db DB, opts *TenantOpts) TenantRow {
	tb.Helper()
	o := deref(opts)
	var r TenantRow
	err := db.QueryRow(tb.Context(), insertTenant, cmp.Or(o.ID, unique("tenant_")), o.Name).Scan(&r.ID, &r.Name, &r.CreatedAt)
	check(tb, "tenant", err)
	return r
}

// EndpointOpts are an endpoint's columns.
type EndpointOpts struct {
	// ID defaults to a fresh UUIDv7.
	ID uuid.UUID
	// TenantID defaults to a tenant inserted with Tenant.
	TenantID string
	// URL defaults to https://example.com/hook.
	URL string
	// Description defaults to empty.
	Description string
	// EventTypes defaults to none, which subscribes to every type.
	EventTypes []string
}

// EndpointRow is an inserted endpoint. It has no signing secret.
type EndpointRow struct {
	ID          uuid.UUID
	TenantID    string
	URL         string
	Description string
	EventTypes  []string
	Enabled     bool
	CreatedAt   time.Time
}

// Endpoint inserts an enabled endpoint.
func Endpoint(tb testing.TB, db DB, opts *EndpointOpts) EndpointRow {
	tb.Helper()
	o := deref(opts)
	if o.EventTypes == nil {
		o.EventTypes = []string{}
	}
	var r EndpointRow
	err := db.QueryRow(tb.Context(), insertEndpoint, newID(o.ID), tenant(tb, db, o.TenantID),
		cmp.Or(o.URL, "https://example.com/hook"), o.Description, o.EventTypes).
		Scan(&r.ID, &r.TenantID, &r.URL, &r.Description, &r.EventTypes, &r.Enabled, &r.CreatedAt)
	check(tb, "endpoint", err)
	return r
}

// MessageOpts are a message's columns.
type MessageOpts struct {
	// ID defaults to a fresh UUIDv7.
	ID uuid.UUID
	// TenantID defaults to a tenant inserted with Tenant.
	TenantID string
	// EventType defaults to invoice.paid.
	EventType string
	// ObjectID defaults to a fresh "inv_<n>".
	ObjectID string
	// ObjectVersion defaults to 1.
	ObjectVersion int64
	// Body defaults to {}.
	Body string
	// CreatedAt defaults to the database's now().
	CreatedAt *time.Time
	// DispatchedAt defaults to nil: the message waits for the fan-out.
	DispatchedAt *time.Time
}

// MessageRow is an inserted message.
type MessageRow struct {
	ID            uuid.UUID
	TenantID      string
	EventType     string
	ObjectID      string
	ObjectVersion int64
	Body          string
	CreatedAt     time.Time
	DispatchedAt  *time.Time
}

// Message inserts a message.
func Message(tb testing.TB, db DB, opts *MessageOpts) MessageRow {
	tb.Helper()
	o := deref(opts)
	var r MessageRow
	err := db.QueryRow(tb.Context(), insertMessage, newID(o.ID), tenant(tb, db, o.TenantID),
		cmp.Or(o.EventType, "invoice.paid"), cmp.Or(o.ObjectID, unique("inv_")), cmp.Or(o.ObjectVersion, 1),
		cmp.Or(o.Body, "{}"), o.CreatedAt, o.DispatchedAt).
		Scan(&r.ID, &r.TenantID, &r.EventType, &r.ObjectID, &r.ObjectVersion, &r.Body, &r.CreatedAt, &r.DispatchedAt)
	check(tb, "message", err)
	return r
}

// DeliveryOpts are a delivery's columns. Its tenant is always its
// endpoint's.
type DeliveryOpts struct {
	// ID defaults to a fresh UUIDv7 of its message's time, as the fan-out
	// makes it (package historyid).
	ID uuid.UUID
	// EndpointID defaults to an endpoint inserted with Endpoint.
	EndpointID uuid.UUID
	// MessageID defaults to a message of the endpoint's tenant inserted
	// with Message.
	MessageID uuid.UUID
	// Status defaults to deliverystatus.Pending.
	Status deliverystatus.Status
	// FirstAttemptAt defaults to nil: never attempted.
	FirstAttemptAt *time.Time
	// CompletedAt defaults to nil: not settled.
	CompletedAt *time.Time
	// CreatedAt defaults to the database's now().
	CreatedAt *time.Time
}

// DeliveryRow is an inserted delivery.
type DeliveryRow struct {
	ID             uuid.UUID
	MessageID      uuid.UUID
	EndpointID     uuid.UUID
	TenantID       string
	Status         deliverystatus.Status
	FirstAttemptAt *time.Time
	CompletedAt    *time.Time
	CreatedAt      time.Time
}

// Delivery inserts a delivery, without the River job that would work it.
func Delivery(tb testing.TB, db DB, opts *DeliveryOpts) DeliveryRow {
	tb.Helper()
	o := deref(opts)
	if o.EndpointID == uuid.Nil {
		o.EndpointID = Endpoint(tb, db, nil).ID
	}
	if o.MessageID == uuid.Nil {
		o.MessageID = Message(tb, db, &MessageOpts{TenantID: tenantOf(tb, db, o.EndpointID)}).ID
	}
	if o.ID == uuid.Nil {
		id, err := historyid.Child(o.MessageID)
		check(tb, "delivery id", err)
		o.ID = id
	}
	var r DeliveryRow
	err := db.QueryRow(tb.Context(), insertDelivery, o.ID, o.MessageID, o.EndpointID,
		cmp.Or(o.Status, deliverystatus.Pending), o.FirstAttemptAt, o.CompletedAt, o.CreatedAt).
		Scan(&r.ID, &r.MessageID, &r.EndpointID, &r.TenantID, &r.Status, &r.FirstAttemptAt, &r.CompletedAt, &r.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("endpoint %s does not exist", o.EndpointID)
	}
	check(tb, "delivery", err)
	return r
}

// newID returns id, or a fresh UUIDv7 when id is zero.
func newID(id uuid.UUID) uuid.UUID {
	if id == uuid.Nil {
		return uuid.Must(uuid.NewV7())
	}
	return id
}

// tenant returns id, or the id of a tenant it inserts when id is empty.
func tenant(tb testing.TB, db DB, id string) string {
	tb.Helper()
	if id == "" {
		return Tenant(tb, db, nil).ID
	}
	return id
}

func tenantOf(tb testing.TB, db DB, endpoint uuid.UUID) string {
	tb.Helper()
	var tenant string
	check(tb, "delivery", db.QueryRow(tb.Context(), selectEndpointTenant, endpoint).Scan(&tenant))
	return tenant
}

// deref returns a copy of *opts, or the zero options when opts is nil.
func deref[T any](opts *T) T {
	var o T
	if opts != nil {
		o = *opts
	}
	return o
}

var sequence atomic.Int64

// unique returns prefix followed by a number no other call in this test
// binary returns.
func unique(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, sequence.Add(1))
}

func check(tb testing.TB, what string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("testfactory: insert %s: %v", what, err)
	}
}
