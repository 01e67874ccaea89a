// Package erasure deletes an endpoint or a tenant with its history (a
// person's right to erasure) in the background, in bounded steps.
//
// StartEndpointTx and StartTenantTx mark the endpoint or tenant deleted at
// once, in the caller's transaction: it disappears from every list and
// lookup, a deleted endpoint is disabled (its queued jobs send nothing), a
// tenant's API keys, portal links and sessions are deleted, and a tenant
// being erased takes no new messages (herald.try_publish_many refuses
// them). They record an Erasure and queue the River job (Args) that a
// dispatcher's Worker works: it deletes the history in batches of at most
// DefaultBatchSize rows, each batch a transaction of its own found through
// an index, then the row itself. A job stopped midway resumes where the
// rows left off: every step deletes what remains.
//
// Starting twice is harmless: a second call returns the same Erasure (and
// queues its job again if it had stopped), including once it completed.
package erasure

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Status is where an erasure stands.
type Status string

// The statuses of an erasure.
const (
	// StatusRunning: the job is deleting the history.
	StatusRunning Status = "running"
	// StatusCompleted: the history and the row are gone.
	StatusCompleted Status = "completed"
)

// Erasure is the erasure of an endpoint or of a whole tenant, with its
// progress.
type Erasure struct {
	ID       uuid.UUID `json:"id"`
	TenantID string    `json:"tenant_id"`
	// EndpointID is the endpoint erased; nil when the whole tenant is.
	EndpointID *uuid.UUID `json:"endpoint_id,omitempty"`
	Status     Status     `json:"status"`
	// RowsDeleted is how many rows of history (messages, deliveries,
	// attempts, replay records; for a tenant also its object versions and
	// idempotency keys) are deleted so far.
	RowsDeleted int64     `json:"rows_deleted"`
	StartedAt   time.Time `json:"started_at"`
	// UpdatedAt is when the last batch was deleted.
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// Kind is "endpoint" or "tenant": what is erased.
func (e Erasure) Kind() string {
	if e.EndpointID != nil {
		return "endpoint"
	}
	return "tenant"
}

// ErrNotFound means no endpoint, tenant or erasure has the id (for an
// endpoint, of the tenant given).
var ErrNotFound = errors.New("not found")

// Inserter queues River jobs in a transaction; *river.Client[pgx.Tx] is
// one.
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// DB is a pool or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func scanErasure(row pgx.Row) (Erasure, error) {
	var e Erasure
	err := row.Scan(&e.ID, &e.TenantID, &e.EndpointID, &e.Status, &e.RowsDeleted, &e.StartedAt, &e.UpdatedAt, &e.CompletedAt)
	return e, err
}

// Get returns the erasure id, or an error wrapping ErrNotFound. It does
// not check who asks: the caller compares TenantID with what the asker
// may see.
func Get(ctx context.Context, db DB, id uuid.UUID) (Erasure, error) {
	e, err := scanErasure(db.QueryRow(ctx, selectErasure, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Erasure{}, fmt.Errorf("erasure %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Erasure{}, fmt.Errorf("erasure %s: %w", id, err)
	}
	return e, nil
}

// StartEndpoint is StartEndpointTx in a transaction of its own.
func StartEndpoint(ctx context.Context, pool *pgxpool.Pool, jobs Inserter, tenantID string, endpointID uuid.UUID) (e Erasure, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		e, err = StartEndpointTx(ctx, tx, jobs, tenantID, endpointID)
		return err
	})
	return e, err
}

// StartEndpointTx marks the endpoint endpointID of tenantID deleted and
// queues its erasure; both take effect when tx commits. For an endpoint
// already deleted it returns that erasure, completed or not. An endpoint
// that neither exists nor was erased is an error wrapping ErrNotFound.
func StartEndpointTx(ctx context.Context, tx pgx.Tx, jobs Inserter, tenantID string, endpointID uuid.UUID) (Erasure, error) {
	fail := func(err error) (Erasure, error) {
		return Erasure{}, fmt.Errorf("erase endpoint %s: %w", endpointID, err)
	}
	var deleted bool
	err := tx.QueryRow(ctx, lockEndpoint, endpointID, tenantID).Scan(&deleted)
	if errors.Is(err, pgx.ErrNoRows) {
		e, err := scanErasure(tx.QueryRow(ctx, selectEndpointErasure, endpointID, tenantID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fail(ErrNotFound)
		}
		if err != nil {
			return fail(err)
		}
		return e, nil
	}
	if err != nil {
		return fail(err)
	}
	e, err := scanErasure(tx.QueryRow(ctx, selectEndpointErasure, endpointID, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		// Not deleted yet, or deleted with its tenant: the tenant's
		// erasure erases it too, and this one answers for the endpoint.
		now := time.Now()
		if !deleted {
			if err := mark(ctx, tx, &endpointID, tenantID, now); err != nil {
				return fail(err)
			}
		}
		e, err = scanErasure(tx.QueryRow(ctx, insertErasure, uuid.Must(uuid.NewV7()), tenantID, endpointID, now))
	}
	if err != nil {
		return fail(err)
	}
	if err := queue(ctx, tx, jobs, e); err != nil {
		return fail(err)
	}
	return e, nil
}

// StartTenant is StartTenantTx in a transaction of its own.
func StartTenant(ctx context.Context, pool *pgxpool.Pool, jobs Inserter, tenantID string) (e Erasure, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		e, err = StartTenantTx(ctx, tx, jobs, tenantID)
		return err
	})
	return e, err
}

// StartTenantTx marks the tenant tenantID and its endpoints deleted,
// deletes its API keys, portal links and sessions, and queues its erasure;
// all take effect when tx commits. For a tenant already deleted it returns
// its latest erasure, completed or not. A tenant that neither exists nor
// was erased is an error wrapping ErrNotFound.
func StartTenantTx(ctx context.Context, tx pgx.Tx, jobs Inserter, tenantID string) (Erasure, error) {
	fail := func(err error) (Erasure, error) {
		return Erasure{}, fmt.Errorf("erase tenant %q: %w", tenantID, err)
	}
	var deleted bool
	err := tx.QueryRow(ctx, lockTenant, tenantID).Scan(&deleted)
	if errors.Is(err, pgx.ErrNoRows) {
		e, err := scanErasure(tx.QueryRow(ctx, selectTenantErasure, tenantID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fail(ErrNotFound)
		}
		if err != nil {
			return fail(err)
		}
		return e, nil
	}
	if err != nil {
		return fail(err)
	}
	var e Erasure
	if deleted {
		e, err = scanErasure(tx.QueryRow(ctx, selectTenantErasure, tenantID))
	} else {
		now := time.Now()
		if _, err := tx.Exec(ctx, markTenant, tenantID, now); err != nil {
			return fail(err)
		}
		if err := mark(ctx, tx, nil, tenantID, now); err != nil {
			return fail(err)
		}
		if _, err := tx.Exec(ctx, deleteTenantCredentials, tenantID); err != nil {
			return fail(err)
		}
		e, err = scanErasure(tx.QueryRow(ctx, insertErasure, uuid.Must(uuid.NewV7()), tenantID, nil, now))
	}
	if err != nil {
		return fail(err)
	}
	if err := queue(ctx, tx, jobs, e); err != nil {
		return fail(err)
	}
	return e, nil
}

// mark marks the endpoint (nil: every endpoint of the tenant) deleted and
// stops its running replays.
func mark(ctx context.Context, tx pgx.Tx, endpointID *uuid.UUID, tenantID string, at time.Time) error {
	if _, err := tx.Exec(ctx, markEndpoints, endpointID, tenantID, at); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, completeReplays, endpointID, tenantID)
	return err
}

// queue queues the job of a running erasure. Queueing again is harmless
// (one live job per erasure), and revives one whose job was discarded.
func queue(ctx context.Context, tx pgx.Tx, jobs Inserter, e Erasure) error {
	if e.Status != StatusRunning {
		return nil
	}
	_, err := jobs.InsertTx(ctx, tx, Args{ErasureID: e.ID}, nil)
	return err
}
