package relay

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A source keeps what waits to be relayed, what was refused, and each
// object's version for good; everything else goes:
//   - a relayed message once RelayedGrace has passed since its relay;
//   - an idempotency key once it is older than Herald's global retention
//     (herald.retention_settings, which the dispatchers' maintenance
//     records), when Herald prunes its own: a key is honoured as long in
//     split mode as in single mode.
//
// A pass runs at most every PruneInterval per source, deletes in batches
// of PruneBatch along an index, each its own statement, and stops after
// PruneBudget, so a backlog of relayed rows never holds a source's locks
// or its relay up for long.
const (
	// PruneInterval is the least time between two retention passes on
	// one source.
	PruneInterval = time.Minute
	// PruneBatch is how many rows one delete statement removes.
	PruneBatch = 1000
	// PruneBudget bounds one pass; the next pass goes on.
	PruneBudget = 10 * time.Second
)

// pruneIfDue runs a retention pass on s when next has passed and returns
// when the next is due.
func (r *Relay) pruneIfDue(ctx context.Context, s Source, next time.Time) time.Time {
	if time.Now().Before(next) || ctx.Err() != nil {
		return next
	}
	if err := r.prune(ctx, s); err != nil && ctx.Err() == nil {
		r.logger.ErrorContext(ctx, "source retention; trying again at the next pass", "source", s.Name, "error", err)
	}
	return time.Now().Add(PruneInterval)
}

// prune deletes s's relayed messages past RelayedGrace and its
// idempotency keys past Herald's retention, PruneBatch at a time, within
// PruneBudget.
func (r *Relay) prune(ctx context.Context, s Source) error {
	ctx, cancel := context.WithTimeout(ctx, PruneBudget)
	defer cancel()
	var horizon time.Time
	if err := r.pool.QueryRow(ctx, retentionHorizon).Scan(&horizon); err != nil {
		return fmt.Errorf("read Herald's retention: %w", err)
	}
	relayed, err := deleteInBatches(ctx, s, deleteRelayed, r.relayedGrace.Seconds())
	if err != nil {
		return fmt.Errorf("delete relayed messages: %w", err)
	}
	keys, err := deleteInBatches(ctx, s, deleteOldKeys, horizon)
	if err != nil {
		return fmt.Errorf("delete idempotency keys past retention: %w", err)
	}
	if relayed+keys > 0 {
		r.logger.InfoContext(ctx, "source retention", "source", s.Name, "relayed_deleted", relayed, "keys_deleted", keys)
	}
	return nil
}

// deleteInBatches runs query (a delete of up to $2 rows older than $1,
// its horizon)
// until it deletes less than PruneBatch or the budget ends, and returns
// how many rows it deleted.
func deleteInBatches(ctx context.Context, s Source, query string, horizon any) (int64, error) {
	var total int64
	for {
		tag, err := s.Pool.Exec(ctx, query, horizon, PruneBatch)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < PruneBatch {
			return total, nil
		}
	}
}
