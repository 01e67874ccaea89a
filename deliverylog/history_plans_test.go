package deliverylog

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/historyplan"
)

// Every list and lookup of the delivery log (the API's and the portal's)
// reads history through an index (issue 16, item 3).
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	var (
		none    *time.Time
		noID    *uuid.UUID
		noText  *string
		status  = "failed"
		ep      = &s.EndpointID
		weekAgo = time.Now().Add(-7 * 24 * time.Hour)
	)
	// A page of the portal's log (its logPageSize): the hot tenant's latest
	// 25 messages.
	var pageOfMessages []uuid.UUID
	rows, err := pool.Query(t.Context(), `SELECT id FROM herald.messages WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT 25`, s.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if pageOfMessages, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
		t.Fatal(err)
	}
	// A filtered page's messages may lie anywhere in the tenant's history
	// (a filter that matches rarely; ScanBudget bounds the walk, not the
	// page's span): a page of messages with a failed delivery, spread
	// over a tenant's 30 days.
	var spreadTenant string
	if err := pool.QueryRow(t.Context(), `SELECT tenant_id FROM herald.deliveries WHERE status = 'failed'
GROUP BY tenant_id ORDER BY count(*) DESC, tenant_id LIMIT 1`).Scan(&spreadTenant); err != nil {
		t.Fatal(err)
	}
	spreadPage := historyplan.Batch(t, pool, 25, `SELECT message_id FROM (
    SELECT message_id, row_number() OVER (ORDER BY id) AS i, count(*) OVER () AS n
    FROM herald.deliveries WHERE tenant_id = $1 AND status = 'failed') d
WHERE i % (n / 25) = 0 ORDER BY message_id DESC LIMIT 25`, spreadTenant)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "messages: first page", SQL: listMessages, Args: []any{s.TenantID, noText, noText, noID, none, none, none, noID, 51, ScanBudget},
			OnePartition: []string{"deliveries"}},
		{Name: "messages: next page", SQL: listMessages, Args: []any{s.TenantID, noText, noText, noID, none, none, &s.DeliveryAt, &s.MessageID, 51, ScanBudget},
			IndexConds: []string{"ROW(created_at, id) < ROW("}, OnePartition: []string{"deliveries"}},
		{Name: "messages: by status and endpoint", SQL: listMessages, Args: []any{s.TenantID, noText, &status, ep, none, none, none, noID, 51, ScanBudget},
			OnePartition: []string{"deliveries"}},
		{Name: "messages: by type since a week", SQL: listMessageSummaries, Args: []any{s.TenantID, "invoice.paid", noText, noID, &weekAgo, none, none, noID, 51, ScanBudget}},
		{Name: "messages: where the walk ends", SQL: walkEnd, Args: []any{s.TenantID, none, none, &s.DeliveryAt, &s.MessageID, ScanBudget},
			IndexConds: []string{"ROW(created_at, id) < ROW("}},
		{Name: "message", SQL: selectMessage, Args: []any{s.TenantID, s.MessageID}, OnePartition: []string{"deliveries"}},
		{Name: "message: deliveries", SQL: listDeliveries, Args: []any{s.TenantID, s.MessageID}, OnePartition: []string{"deliveries"}},
		{Name: "messages: their deliveries", SQL: listDeliveriesOfMessages, Args: []any{s.TenantID, pageOfMessages}, OnePartition: []string{"deliveries"}},
		{Name: "messages: a filtered page's deliveries", SQL: listDeliveriesOfMessages, Args: []any{spreadTenant, spreadPage}, OnePartition: []string{"deliveries"}},
		{Name: "endpoint: recent deliveries", SQL: listRecentDeliveries, Args: []any{s.TenantID, s.EndpointID, 50}},
		{Name: "delivery", SQL: selectDelivery, Args: []any{s.TenantID, s.DeliveryID}},
		{Name: "message: attempts", SQL: listMessageAttempts, Args: []any{s.TenantID, s.MessageID, none, none, none, noID, 51}, OnePartition: []string{"attempts"}},
		{Name: "message: attempts by delivery", SQL: listAttemptsByDelivery, Args: []any{s.TenantID, s.MessageID}, OnePartition: []string{"attempts"}},
		{Name: "endpoint: attempts, next page", SQL: listEndpointAttempts, Args: []any{s.TenantID, s.EndpointID, none, none, &s.DeliveryAt, &s.DeliveryID, 51},
			IndexConds: []string{"ROW(started_at, id) < ROW("}},
		{Name: "attempt", SQL: selectAttempt, Args: []any{s.TenantID, s.AttemptID}, OnePartition: []string{"attempts", "deliveries", "messages"}},
	})
}
