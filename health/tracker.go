// Package health keeps track of whether each endpoint works, disables the
// ones that have stopped working, and tells the operator through
// operational events delivered by Herald's own pipeline.
//
// The delivery worker reports every attempt, in the transaction that
// records it: [Tracker.Succeeded] or [Tracker.Failed]. The first failure
// after a success starts a failing spell (endpoints.failing_since). When the
// spell has lasted Config.WarnAfter (default 24 h) endpoint.failing is
// published, once per spell; when it has lasted Config.DisableAfter
// (default 5 days) the endpoint is disabled with its reason and time,
// its pending deliveries are cancelled and endpoint.disabled is published.
// A success ends the spell (and publishes endpoint.recovered if the spell
// had been announced). A 410 Gone disables at once ([Tracker.Disable]).
//
// The same transaction keeps the endpoint's breaker: BreakerThreshold
// attempts in a row without an answer open it (endpoints.breaker_opened_at),
// an answer closes it. Both are written only when the state changes, so a
// dead endpoint's probes, like a healthy endpoint's successes, read the row
// and write nothing.
// Re-enabling is explicit (store.EnableEndpoint) and clears all of it.
//
// Operational events are ordinary messages of the ops tenant (default
// "herald-ops"), published with outbox.Publish in the same transaction as
// the state change they report: they exist exactly when the change
// committed, and are then signed, delivered and retried like any webhook
// to the endpoints the operator gave that tenant.
package health

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// successResolution is how stale last_success_at may be before a success
// writes it again. Healthy endpoints succeed constantly; rewriting their row
// on every attempt would make concurrent attempts queue on its lock.
const successResolution = time.Minute

// Tracker applies attempt results to endpoint health. It holds no state of
// its own and is safe for concurrent use.
type Tracker struct {
	cfg Config
}

// New returns a Tracker configured by cfg.
func New(cfg Config) *Tracker {
	return &Tracker{cfg: cfg.withDefaults()}
}

// endpointState is an endpoint's health columns.
type endpointState struct {
	Endpoint
	enabled           bool
	failingSince      *time.Time
	failingNotifiedAt *time.Time
	lastSuccessAt     *time.Time
	unreachableStreak int
}

func (t *Tracker) state(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, lock bool) (endpointState, error) {
	query := selectState
	if lock {
		query = selectStateForUpdate
	}
	s := endpointState{Endpoint: Endpoint{ID: endpointID}}
	err := tx.QueryRow(ctx, query, endpointID).Scan(&s.TenantID, &s.URL, &s.Description,
		&s.enabled, &s.failingSince, &s.failingNotifiedAt, &s.lastSuccessAt, &s.unreachableStreak)
	return s, err
}

// Succeeded records a successful attempt to endpoint at time at: it ends a
// failing spell, publishing endpoint.recovered when the spell had been
// announced. An endpoint deleted meanwhile is no error.
func (t *Tracker) Succeeded(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, at time.Time) error {
	s, err := t.state(ctx, tx, endpointID, false)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("endpoint %s health: %w", endpointID, err)
	}
	if s.failingSince == nil && s.unreachableStreak == 0 && s.lastSuccessAt != nil && at.Sub(*s.lastSuccessAt) < successResolution {
		return nil
	}
	if s, err = t.state(ctx, tx, endpointID, true); err != nil {
		return fmt.Errorf("endpoint %s health: %w", endpointID, err)
	}
	if _, err := tx.Exec(ctx, recordSuccess, endpointID, at); err != nil {
		return fmt.Errorf("endpoint %s health: record success: %w", endpointID, err)
	}
	if s.failingSince == nil {
		return nil
	}
	t.cfg.Logger.InfoContext(ctx, "endpoint recovered", "endpoint_id", endpointID, "tenant_id", s.TenantID,
		"failing_since", *s.failingSince, "announced", s.failingNotifiedAt != nil)
	if s.failingNotifiedAt == nil {
		return nil
	}
	return t.publish(ctx, tx, s.Endpoint, TypeEndpointRecovered, endpointID.String(), RecoveredEvent{
		Endpoint: s.Endpoint, FailingSince: *s.failingSince, RecoveredAt: at,
	})
}

// Failed records a failed attempt to endpoint at time at; problem says what
// went wrong ("HTTP 503 Service Unavailable"), and unreachable that no
// answer came (the attempt timed out or could not connect). It starts a
// failing spell, moves the endpoint's breaker (see BreakerThreshold),
// publishes endpoint.failing once the spell has lasted WarnAfter, and
// disables the endpoint once it has lasted DisableAfter, in which case
// disabled is true. A disabled or deleted endpoint is left alone.
func (t *Tracker) Failed(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, at time.Time, problem string, unreachable bool) (disabled bool, err error) {
	s, err := t.state(ctx, tx, endpointID, false)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("endpoint %s health: %w", endpointID, err)
	}
	if !s.enabled || !t.failureChangesState(s, at, unreachable) {
		return false, nil
	}
	if s, err = t.state(ctx, tx, endpointID, true); err != nil {
		return false, fmt.Errorf("endpoint %s health: %w", endpointID, err)
	}
	if !s.enabled {
		return false, nil
	}
	if s.failingSince == nil || breakerMoves(s, unreachable) {
		if _, err := tx.Exec(ctx, recordFailure, endpointID, at, unreachable, BreakerThreshold); err != nil {
			return false, fmt.Errorf("endpoint %s health: record failure: %w", endpointID, err)
		}
		if s.failingSince == nil {
			s.failingSince = &at
		}
	}
	spell := at.Sub(*s.failingSince)
	if t.cfg.WarnAfter > 0 && s.failingNotifiedAt == nil && spell >= t.cfg.WarnAfter {
		if err := t.warn(ctx, tx, s, at, problem); err != nil {
			return false, err
		}
	}
	if t.cfg.DisableAfter > 0 && spell >= t.cfg.DisableAfter {
		reason := fmt.Sprintf("no successful attempt for %s (failing since %s); last error: %s",
			humanDuration(t.cfg.DisableAfter), s.failingSince.UTC().Format(time.RFC3339), problem)
		return t.Disable(ctx, tx, endpointID, reason, at)
	}
	return false, nil
}

// failureChangesState says whether a failure at at has anything to write,
// judged without a lock; the caller re-reads under the lock before writing.
func (t *Tracker) failureChangesState(s endpointState, at time.Time, unreachable bool) bool {
	if s.failingSince == nil || breakerMoves(s, unreachable) {
		return true
	}
	spell := at.Sub(*s.failingSince)
	warn := t.cfg.WarnAfter > 0 && s.failingNotifiedAt == nil && spell >= t.cfg.WarnAfter
	disable := t.cfg.DisableAfter > 0 && spell >= t.cfg.DisableAfter
	return warn || disable
}

func (t *Tracker) warn(ctx context.Context, tx pgx.Tx, s endpointState, at time.Time, problem string) error {
	if _, err := tx.Exec(ctx, markWarned, s.ID, at); err != nil {
		return fmt.Errorf("endpoint %s health: mark warned: %w", s.ID, err)
	}
	t.cfg.Logger.WarnContext(ctx, "endpoint failing", "endpoint_id", s.ID, "tenant_id", s.TenantID,
		"failing_since", *s.failingSince, "last_error", problem)
	event := FailingEvent{Endpoint: s.Endpoint, FailingSince: *s.failingSince, LastSuccessAt: s.lastSuccessAt, LastError: problem}
	if t.cfg.DisableAfter > 0 {
		disableAt := s.failingSince.Add(t.cfg.DisableAfter)
		event.DisableAt = &disableAt
	}
	return t.publish(ctx, tx, s.Endpoint, TypeEndpointFailing, s.ID.String(), event)
}

// breakerMoves says whether a failure changes s's breaker: an unanswered
// attempt while the breaker is not open yet counts towards opening it, an
// answer ends the streak. Once open, further unanswered attempts write
// nothing.
func breakerMoves(s endpointState, unreachable bool) bool {
	if unreachable {
		return s.unreachableStreak < BreakerThreshold
	}
	return s.unreachableStreak > 0
}

// Disable disables endpoint at time at with reason (kept in
// endpoints.disabled_reason, e.g. "410 Gone"), cancels its pending
// deliveries and publishes endpoint.disabled. disabled is false when the
// endpoint was already disabled or does not exist; nothing is changed then.
func (t *Tracker) Disable(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, reason string, at time.Time) (disabled bool, err error) {
	event := DisabledEvent{Endpoint: Endpoint{ID: endpointID}, Reason: reason, DisabledAt: at}
	err = tx.QueryRow(ctx, disableEndpoint, endpointID, reason, at).Scan(
		&event.Endpoint.TenantID, &event.Endpoint.URL, &event.Endpoint.Description, &event.FailingSince, &event.LastSuccessAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("disable endpoint %s: %w", endpointID, err)
	}
	cancelled, err := tx.Exec(ctx, cancelPendingDeliveries, endpointID, at)
	if err != nil {
		return false, fmt.Errorf("disable endpoint %s: cancel pending deliveries: %w", endpointID, err)
	}
	t.cfg.Logger.WarnContext(ctx, "endpoint disabled", "endpoint_id", endpointID, "tenant_id", event.Endpoint.TenantID,
		"reason", reason, "cancelled_deliveries", cancelled.RowsAffected())
	if err := t.publish(ctx, tx, event.Endpoint, TypeEndpointDisabled, endpointID.String(), event); err != nil {
		return false, err
	}
	return true, nil
}

// Exhausted publishes delivery.exhausted for a delivery whose retry window
// was spent. Call it after the delivery row records its last attempt, in
// the same transaction. A deleted delivery is no error.
func (t *Tracker) Exhausted(ctx context.Context, tx pgx.Tx, deliveryID uuid.UUID) error {
	e := ExhaustedEvent{DeliveryID: deliveryID}
	err := tx.QueryRow(ctx, selectExhausted, deliveryID).Scan(
		&e.MessageID, &e.EventType, &e.Attempts, &e.FirstAttemptAt, &e.LastAttemptAt, &e.LastStatusCode, &e.LastError,
		&e.Endpoint.ID, &e.Endpoint.TenantID, &e.Endpoint.URL, &e.Endpoint.Description)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delivery %s exhausted: %w", deliveryID, err)
	}
	e.WebhookID = "msg_" + e.MessageID.String()
	t.cfg.Logger.WarnContext(ctx, "delivery exhausted", "delivery_id", deliveryID, "endpoint_id", e.Endpoint.ID,
		"tenant_id", e.Endpoint.TenantID, "attempts", e.Attempts)
	return t.publish(ctx, tx, e.Endpoint, TypeDeliveryExhausted, deliveryID.String(), e)
}

// humanDuration writes whole days as days ("5 days"), anything else as Go
// does ("36h0m0s").
func humanDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}
