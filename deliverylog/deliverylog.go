package deliverylog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/page"
)

// DB is what the read model needs from a pool or a transaction.
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ErrNotFound means the tenant has no message, delivery or attempt with the
// id asked for. Errors wrap it with what was looked for.
var ErrNotFound = errors.New("not found")

// orNull returns nil for the zero value, which the queries read as "no
// filter".
func orNull[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// after returns the keyset arguments of req: the cursor's time and id, or
// two nils on the first page.
func after(req page.Request) (*time.Time, *uuid.UUID, error) {
	if req.After == nil {
		return nil, nil, nil
	}
	id, err := uuid.Parse(req.After.ID)
	if err != nil {
		return nil, nil, page.ErrInvalidCursor
	}
	return req.AfterTime(), &id, nil
}

// one reads the row of tenantID's what (a message, a delivery, an attempt)
// id with query, whose parameters are the tenant and the id. No row is an
// error wrapping ErrNotFound.
func one[T any](ctx context.Context, db DB, what, query string, tenantID string, id uuid.UUID, scan pgx.RowToFunc[T]) (T, error) {
	var zero T
	rows, err := db.Query(ctx, query, tenantID, id)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", what, id, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return zero, fmt.Errorf("%s %s: %w", what, id, ErrNotFound)
	}
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", what, id, err)
	}
	return v, nil
}
