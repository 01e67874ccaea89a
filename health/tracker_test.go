package health_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

type testBundle struct {
	pool     *pgxpool.Pool
	tracker  *health.Tracker
	endpoint uuid.UUID
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	return &testBundle{pool: pool, tracker: health.New(health.Config{}), endpoint: insertEndpoint(t, pool, "acme")}
}

// insertEndpoint inserts tenant and an endpoint of it.
func insertEndpoint(t *testing.T, pool *pgxpool.Pool, tenant string) uuid.UUID {
	t.Helper()
	testfactory.Tenant(t, pool, &testfactory.TenantOpts{ID: tenant})
	return testfactory.Endpoint(t, pool, &testfactory.EndpointOpts{
		TenantID: tenant, URL: "https://hooks.example.com/in", Description: "billing",
	}).ID
}

// inTx runs fn in a transaction and commits it.
func inTx(t *testing.T, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, fn(tx))
	require.NoError(t, tx.Commit(ctx))
}

func (b *testBundle) fail(t *testing.T, at time.Time) (disabled bool) {
	t.Helper()
	inTx(t, b.pool, func(tx pgx.Tx) error {
		var err error
		disabled, err = b.tracker.Failed(context.Background(), tx, b.endpoint, at, "HTTP 503 Service Unavailable", false)
		return err
	})
	return disabled
}

func (b *testBundle) succeed(t *testing.T, at time.Time) {
	t.Helper()
	inTx(t, b.pool, func(tx pgx.Tx) error {
		return b.tracker.Succeeded(context.Background(), tx, b.endpoint, at)
	})
}

type endpointRow struct {
	Enabled           bool
	DisabledReason    *string
	DisabledAt        *time.Time
	FailingSince      *time.Time
	FailingNotifiedAt *time.Time
	LastSuccessAt     *time.Time
}

func (b *testBundle) endpointRow(t *testing.T) endpointRow {
	t.Helper()
	var r endpointRow
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT enabled, disabled_reason, disabled_at, failing_since, failing_notified_at, last_success_at
		 FROM herald.endpoints WHERE id = $1`, b.endpoint).
		Scan(&r.Enabled, &r.DisabledReason, &r.DisabledAt, &r.FailingSince, &r.FailingNotifiedAt, &r.LastSuccessAt))
	return r
}

type opsMessage struct {
	Type     string
	ObjectID string
	Body     struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
		Data   json.RawMessage `json:"data"`
	}
}

// opsMessages returns what was published to the ops tenant, oldest first.
func opsMessages(t *testing.T, pool *pgxpool.Pool) []opsMessage {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		"SELECT event_type, object_id, body FROM herald.messages WHERE tenant_id = $1 ORDER BY object_version, id", health.DefaultOpsTenant)
	require.NoError(t, err)
	var msgs []opsMessage
	for rows.Next() {
		var m opsMessage
		var body string
		require.NoError(t, rows.Scan(&m.Type, &m.ObjectID, &body))
		require.NoError(t, json.Unmarshal([]byte(body), &m.Body))
		msgs = append(msgs, m)
	}
	require.NoError(t, rows.Err())
	return msgs
}

func types(msgs []opsMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Type
	}
	return out
}

func TestFailingEndpointIsWarnedOnceThenDisabled(t *testing.T) {
	t.Parallel()
	bundle := setup(t)

	require.False(t, bundle.fail(t, t0))
	require.WithinDuration(t, t0, *bundle.endpointRow(t).FailingSince, 0)
	require.False(t, bundle.fail(t, t0.Add(23*time.Hour)))
	require.Empty(t, opsMessages(t, bundle.pool), "no warning before 24 h")

	require.False(t, bundle.fail(t, t0.Add(24*time.Hour)))
	require.False(t, bundle.fail(t, t0.Add(3*day)))
	msgs := opsMessages(t, bundle.pool)
	require.Equal(t, []string{health.TypeEndpointFailing}, types(msgs), "warned once per failing spell")
	var failing health.FailingEvent
	require.NoError(t, json.Unmarshal(msgs[0].Body.Data, &failing))
	require.Equal(t, bundle.endpoint, failing.Endpoint.ID)
	require.Equal(t, "acme", failing.Endpoint.TenantID)
	require.WithinDuration(t, t0, failing.FailingSince, 0)
	require.WithinDuration(t, t0.Add(5*day), *failing.DisableAt, 0)
	require.Equal(t, "HTTP 503 Service Unavailable", failing.LastError)
	require.Equal(t, bundle.endpoint.String(), msgs[0].ObjectID)

	require.True(t, bundle.fail(t, t0.Add(5*day)), "disabled after 5 days without a success")
	row := bundle.endpointRow(t)
	require.False(t, row.Enabled)
	require.WithinDuration(t, t0.Add(5*day), *row.DisabledAt, 0)
	require.Contains(t, *row.DisabledReason, "no successful attempt for 5 days")
	require.Contains(t, *row.DisabledReason, "HTTP 503")

	msgs = opsMessages(t, bundle.pool)
	require.Equal(t, []string{health.TypeEndpointFailing, health.TypeEndpointDisabled}, types(msgs))
	var disabled health.DisabledEvent
	require.NoError(t, json.Unmarshal(msgs[1].Body.Data, &disabled))
	require.Equal(t, *row.DisabledReason, disabled.Reason)
	require.WithinDuration(t, t0, *disabled.FailingSince, 0)
	require.JSONEq(t, `{"id":"`+bundle.endpoint.String()+`","version":2}`, string(msgs[1].Body.Object),
		"the endpoint's events are versions of one object")

	require.False(t, bundle.fail(t, t0.Add(6*day)), "a disabled endpoint is left alone")
	require.Len(t, opsMessages(t, bundle.pool), 2)
}

func TestSuccessResetsTheFailingClock(t *testing.T) {
	t.Parallel()
	bundle := setup(t)

	bundle.fail(t, t0)
	bundle.fail(t, t0.Add(20*time.Hour))
	bundle.succeed(t, t0.Add(21*time.Hour))
	row := bundle.endpointRow(t)
	require.Nil(t, row.FailingSince)
	require.WithinDuration(t, t0.Add(21*time.Hour), *row.LastSuccessAt, 0)

	bundle.fail(t, t0.Add(30*time.Hour))
	bundle.fail(t, t0.Add(53*time.Hour))
	require.Empty(t, opsMessages(t, bundle.pool), "the new spell started at 30 h")
	require.WithinDuration(t, t0.Add(30*time.Hour), *bundle.endpointRow(t).FailingSince, 0)
	bundle.fail(t, t0.Add(54*time.Hour))
	require.Equal(t, []string{health.TypeEndpointFailing}, types(opsMessages(t, bundle.pool)))

	// Days of failures broken by one success never reach a disable.
	for d := 3; d <= 12; d += 3 {
		bundle.succeed(t, t0.Add(time.Duration(d)*day))
		bundle.fail(t, t0.Add(time.Duration(d)*day+time.Hour))
	}
	require.True(t, bundle.endpointRow(t).Enabled)
}

func TestRecoveryIsAnnouncedOnlyAfterAWarning(t *testing.T) {
	t.Parallel()
	bundle := setup(t)

	bundle.fail(t, t0)
	bundle.succeed(t, t0.Add(time.Hour))
	require.Empty(t, opsMessages(t, bundle.pool), "a short spell nobody was told about ends quietly")

	bundle.fail(t, t0.Add(2*time.Hour))
	bundle.fail(t, t0.Add(26*time.Hour))
	bundle.succeed(t, t0.Add(27*time.Hour))
	msgs := opsMessages(t, bundle.pool)
	require.Equal(t, []string{health.TypeEndpointFailing, health.TypeEndpointRecovered}, types(msgs))
	var recovered health.RecoveredEvent
	require.NoError(t, json.Unmarshal(msgs[1].Body.Data, &recovered))
	require.WithinDuration(t, t0.Add(2*time.Hour), recovered.FailingSince, 0)
	require.WithinDuration(t, t0.Add(27*time.Hour), recovered.RecoveredAt, 0)
	require.Nil(t, bundle.endpointRow(t).FailingNotifiedAt)
}

func TestDisableCancelsPendingDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setup(t)
	pending := insertDelivery(t, bundle.pool, bundle.endpoint, "pending")
	done := insertDelivery(t, bundle.pool, bundle.endpoint, "succeeded")
	bundle.fail(t, t0)

	inTx(t, bundle.pool, func(tx pgx.Tx) error {
		disabled, err := bundle.tracker.Disable(ctx, tx, bundle.endpoint, "410 Gone", t0.Add(time.Hour))
		require.True(t, disabled)
		return err
	})
	require.Equal(t, "cancelled", deliveryStatus(t, bundle.pool, pending))
	require.Equal(t, "succeeded", deliveryStatus(t, bundle.pool, done))
	row := bundle.endpointRow(t)
	require.False(t, row.Enabled)
	require.Equal(t, "410 Gone", *row.DisabledReason)
	msgs := opsMessages(t, bundle.pool)
	require.Equal(t, []string{health.TypeEndpointDisabled}, types(msgs))

	inTx(t, bundle.pool, func(tx pgx.Tx) error {
		disabled, err := bundle.tracker.Disable(ctx, tx, bundle.endpoint, "410 Gone", t0.Add(2*time.Hour))
		require.False(t, disabled, "disabling twice changes nothing")
		return err
	})
	require.Len(t, opsMessages(t, bundle.pool), 1)

}

func TestExhaustedDeliveryIsPublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setup(t)
	delivery := insertDelivery(t, bundle.pool, bundle.endpoint, "failed")
	_, err := bundle.pool.Exec(ctx, `UPDATE herald.deliveries SET attempt_count = 17, first_attempt_at = $2,
		last_attempt_at = $3, last_status_code = 500, last_error = 'HTTP 500 Internal Server Error' WHERE id = $1`,
		delivery, t0, t0.Add(3*day))
	require.NoError(t, err)

	inTx(t, bundle.pool, func(tx pgx.Tx) error { return bundle.tracker.Exhausted(ctx, tx, delivery) })
	msgs := opsMessages(t, bundle.pool)
	require.Equal(t, []string{health.TypeDeliveryExhausted}, types(msgs))
	require.Equal(t, delivery.String(), msgs[0].ObjectID)
	var exhausted health.ExhaustedEvent
	require.NoError(t, json.Unmarshal(msgs[0].Body.Data, &exhausted))
	require.Equal(t, delivery, exhausted.DeliveryID)
	require.Equal(t, "msg_"+exhausted.MessageID.String(), exhausted.WebhookID)
	require.Equal(t, "invoice.paid", exhausted.EventType)
	require.Equal(t, 17, exhausted.Attempts)
	require.Equal(t, 500, *exhausted.LastStatusCode)
	require.WithinDuration(t, t0.Add(3*day), *exhausted.LastAttemptAt, 0)
	require.Equal(t, bundle.endpoint, exhausted.Endpoint.ID)
}

func TestOpsTenantEventsAboutItselfAreNotPublished(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	bundle.endpoint = insertEndpoint(t, bundle.pool, health.DefaultOpsTenant)

	bundle.fail(t, t0)
	require.True(t, bundle.fail(t, t0.Add(5*day)), "the ops endpoint is disabled like any other")
	require.Empty(t, opsMessages(t, bundle.pool), "but no event about it feeds back into it")
}

// insertDelivery inserts an invoice.paid message and its delivery to
// endpoint with status.
func insertDelivery(t *testing.T, pool *pgxpool.Pool, endpoint uuid.UUID, status deliverystatus.Status) uuid.UUID {
	t.Helper()
	return testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{EndpointID: endpoint, Status: status}).ID
}

func deliveryStatus(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) string {
	t.Helper()
	var status string
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT status FROM herald.deliveries WHERE id = $1", id).Scan(&status))
	return status
}

func (b *testBundle) unanswered(t *testing.T, at time.Time) {
	t.Helper()
	inTx(t, b.pool, func(tx pgx.Tx) error {
		_, err := b.tracker.Failed(context.Background(), tx, b.endpoint, at, "timed out after 15s", true)
		return err
	})
}

// breaker reads the endpoint's unanswered streak and when its breaker
// opened.
func (b *testBundle) breaker(t *testing.T) (streak int, opened *time.Time) {
	t.Helper()
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT unreachable_streak, breaker_opened_at FROM herald.endpoints WHERE id = $1`, b.endpoint).Scan(&streak, &opened))
	return streak, opened
}

// BreakerThreshold unanswered attempts in a row open the breaker at the
// last one's time; later ones write nothing; an answer, an error status
// included, closes it, and so does a success.
func TestBreakerOpensOnUnansweredAttemptsInARow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range health.BreakerThreshold - 1 {
		b.unanswered(t, t0.Add(time.Duration(i)*time.Minute))
	}
	streak, opened := b.breaker(t)
	require.Equal(t, health.BreakerThreshold-1, streak)
	require.Nil(t, opened, "below the threshold the breaker stays closed")

	b.fail(t, t0.Add(10*time.Minute))
	streak, _ = b.breaker(t)
	require.Zero(t, streak, "an answer, even an error, ends the streak")

	for i := range health.BreakerThreshold + 2 {
		b.unanswered(t, t0.Add(time.Hour+time.Duration(i)*time.Minute))
	}
	streak, opened = b.breaker(t)
	require.Equal(t, health.BreakerThreshold, streak, "the streak stops counting once the breaker is open")
	require.NotNil(t, opened)
	require.True(t, opened.Equal(t0.Add(time.Hour+time.Duration(health.BreakerThreshold-1)*time.Minute)), "it opened at the attempt that reached the threshold, got %s", opened)

	b.fail(t, t0.Add(2*time.Hour))
	streak, opened = b.breaker(t)
	require.Zero(t, streak)
	require.Nil(t, opened, "an answered attempt closes the breaker")

	for i := range health.BreakerThreshold {
		b.unanswered(t, t0.Add(3*time.Hour+time.Duration(i)*time.Minute))
	}
	b.succeed(t, t0.Add(4*time.Hour))
	streak, opened = b.breaker(t)
	require.Zero(t, streak)
	require.Nil(t, opened, "a success closes the breaker")
}
