package receiver

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the receiver needs from a database handle. A *pgxpool.Pool
// satisfies it and is what a Handler and a Worker should be given, since
// they use it from several goroutines; a pgx.Tx satisfies it too, so Prune,
// ListDeadLetters and the redrive functions can run inside a transaction of
// the caller's.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
