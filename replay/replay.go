package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/page"
	"github.com/heraldhq/herald/retention"
)

// Status values of a replay.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
)

// Params says what a replay re-sends: the endpoint's deliveries created in
// [Since, Until). A delivery is created when its message is fanned out,
// normally milliseconds after it was published; the replay walks the
// endpoint's deliveries in that order (deliveries_endpoint_created), so each
// batch costs the same however long the history.
type Params struct {
	EndpointID uuid.UUID
	// Since is the start of the range, inclusive. Required, and not before
	// the tenant's retention horizon (Now less retention.TenantRetention):
	// what is older may have been dropped.
	Since time.Time
	// Until is the end of the range, exclusive. The zero time means Now.
	Until time.Time
	// Now is when the replay is asked for, from which the retention
	// horizon is counted back. The zero time means time.Now().
	Now time.Time
	// OnlyFailed limits the replay to deliveries that failed, were
	// cancelled or were skipped while the endpoint was disabled.
	OnlyFailed bool
}

// Replay is a replay and its progress.
type Replay struct {
	ID         uuid.UUID `json:"id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID uuid.UUID `json:"endpoint_id"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	OnlyFailed bool      `json:"only_failed"`
	Status     string    `json:"status"`
	// Total is how many deliveries the replay covers; counted when it
	// starts and made exact when it completes.
	Total int `json:"total"`
	// Enqueued is how many of them it has queued so far, or found already
	// pending.
	Enqueued int `json:"enqueued"`
	// Done is how many of the enqueued deliveries are no longer pending.
	Done        int        `json:"done"`
	CreatedAt   time.Time  `json:"created_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// ErrInvalidRange means Since is not before Until.
var ErrInvalidRange = errors.New("since must be earlier than until")

// ErrBeforeHorizon is wrapped by a BeforeHorizonError.
var ErrBeforeHorizon = errors.New("since is before the retention horizon")

// BeforeHorizonError means a replay's Since is before its tenant's
// retention horizon: history older than Earliest may be gone.
type BeforeHorizonError struct {
	Since time.Time
	// Earliest is the earliest replayable time, now less Retention.
	Earliest time.Time
	// Retention is the tenant's retention (its own, or the global one).
	Retention time.Duration
}

func (e *BeforeHorizonError) Error() string {
	return fmt.Sprintf("%v: since %s is before %s; history is kept %s", ErrBeforeHorizon,
		e.Since.UTC().Format(time.RFC3339Nano), e.Earliest.UTC().Format(time.RFC3339Nano), e.Retention)
}

func (e *BeforeHorizonError) Unwrap() error { return ErrBeforeHorizon }

// ErrReplayNotFound means no replay of the endpoint has the id.
var ErrReplayNotFound = errors.New("replay not found")

// StartTx creates a replay in tx and queues the River job that walks it;
// the replay runs once tx commits. It returns ErrNotFound for an unknown
// endpoint, ErrEndpointDisabled for a disabled one (enable it first, or its
// deliveries would be cancelled again), ErrInvalidRange for an empty
// range and a *BeforeHorizonError for a Since before the tenant's
// retention horizon.
func StartTx(ctx context.Context, tx pgx.Tx, jobs Inserter, p Params) (Replay, error) {
	fail := func(err error) (Replay, error) {
		return Replay{}, fmt.Errorf("replay endpoint %s: %w", p.EndpointID, err)
	}
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	if p.Until.IsZero() {
		p.Until = p.Now
	}
	if !p.Since.Before(p.Until) {
		return fail(ErrInvalidRange)
	}
	var (
		tenantID string
		enabled  bool
	)
	err := tx.QueryRow(ctx, selectEndpoint, p.EndpointID).Scan(&tenantID, &enabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	if !enabled {
		return fail(ErrEndpointDisabled)
	}
	kept, err := retention.TenantRetention(ctx, tx, tenantID)
	if err != nil {
		return fail(err)
	}
	if earliest := p.Now.Add(-kept); p.Since.Before(earliest) {
		return fail(&BeforeHorizonError{Since: p.Since, Earliest: earliest, Retention: kept})
	}
	id, err := uuid.NewV7()
	if err != nil {
		return fail(err)
	}
	rows, err := tx.Query(ctx, insertReplay, id, tenantID, p.EndpointID, p.Since, p.Until, p.OnlyFailed)
	if err != nil {
		return fail(err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanReplay)
	if err != nil {
		return fail(err)
	}
	if _, err := jobs.InsertTx(ctx, tx, Args{ReplayID: id}, nil); err != nil {
		return fail(fmt.Errorf("queue replay job: %w", err))
	}
	return r, nil
}

// Get returns one of tenantID's replays with its progress, or
// ErrReplayNotFound.
func Get(ctx context.Context, db DB, tenantID string, endpointID, id uuid.UUID) (Replay, error) {
	rows, err := db.Query(ctx, selectReplay, tenantID, endpointID, id)
	if err != nil {
		return Replay{}, fmt.Errorf("replay %s: %w", id, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanReplay)
	if errors.Is(err, pgx.ErrNoRows) {
		return Replay{}, fmt.Errorf("replay %s: %w", id, ErrReplayNotFound)
	}
	if err != nil {
		return Replay{}, fmt.Errorf("replay %s: %w", id, err)
	}
	return r, nil
}

// List returns a page of an endpoint's replays, newest first.
func List(ctx context.Context, db DB, tenantID string, endpointID uuid.UUID, req page.Request) (page.Page[Replay], error) {
	var afterID *uuid.UUID
	if req.After != nil {
		id, err := uuid.Parse(req.After.ID)
		if err != nil {
			return page.Page[Replay]{}, page.ErrInvalidCursor
		}
		afterID = &id
	}
	rows, err := db.Query(ctx, listReplays, tenantID, endpointID, req.AfterTime(), afterID, req.Size()+1)
	if err != nil {
		return page.Page[Replay]{}, fmt.Errorf("list replays of endpoint %s: %w", endpointID, err)
	}
	replays, err := pgx.CollectRows(rows, scanReplay)
	if err != nil {
		return page.Page[Replay]{}, fmt.Errorf("list replays of endpoint %s: %w", endpointID, err)
	}
	return page.Trim(req, replays, func(r Replay) page.Cursor {
		return page.Cursor{CreatedAt: r.CreatedAt, ID: r.ID.String()}
	}), nil
}

func scanReplay(row pgx.CollectableRow) (Replay, error) {
	var r Replay
	err := row.Scan(&r.ID, &r.TenantID, &r.EndpointID, &r.Since, &r.Until, &r.OnlyFailed, &r.Status,
		&r.Total, &r.Enqueued, &r.Done, &r.CreatedAt, &r.CompletedAt)
	return r, err
}
