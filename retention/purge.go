package retention

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/historyid"
)

// A tenant whose own retention is shorter than the global one has its
// history purged row by row: the partitions it shares with every other
// tenant are dropped only at the global horizon.
const (
	// purgeBatch is how many of a tenant's messages one transaction
	// purges, with their deliveries, attempts and replay records.
	purgeBatch = 500
	// purgeBudget bounds the time a pass spends purging; the rest waits
	// for the next pass, at most a minute later.
	purgeBudget = 30 * time.Second
)

// TenantPurge is what a pass purged of one tenant's history.
type TenantPurge struct {
	// Retention is the tenant's own retention and Horizon now less it.
	Retention time.Duration
	Horizon   time.Time
	// Messages, Deliveries and Attempts count the rows deleted.
	Messages, Deliveries, Attempts int64
	// Kept counts the messages past the horizon kept because a delivery
	// of theirs is pending; they go at a later pass, once it settles.
	Kept int64
	// Done is true when the pass walked the tenant's history up to the
	// horizon; false when its time budget ran out or a lock was not
	// granted in time, and the next pass goes on.
	Done bool
}

// tenantWalk is a tenant's purge in progress: its messages up to the
// cursor (afterAt, afterID) have been looked at.
type tenantWalk struct {
	id      string
	purge   *TenantPurge
	afterAt time.Time
	afterID uuid.UUID
}

// purgeTenants purges the history of each tenant whose own retention is
// shorter than the global one: its dispatched messages created before its
// horizon whose deliveries are all settled, with those deliveries, their
// attempts and replay records. Undispatched messages, messages with a
// pending delivery and everything of theirs are kept. Tenants take turns,
// a batch each, until each is done or purgeBudget has passed.
func (m *Maintainer) purgeTenants(ctx context.Context, now time.Time, rep *Report) error {
	rows, err := m.pool.Query(ctx, selectShortRetentions, m.retention)
	if err != nil {
		return fmt.Errorf("list tenants with a retention of their own: %w", err)
	}
	var walks []*tenantWalk
	var (
		id  string
		own time.Duration
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &own}, func() error {
		p := &TenantPurge{Retention: own, Horizon: now.Add(-own)}
		rep.Purged[id] = p
		walks = append(walks, &tenantWalk{id: id, purge: p})
		return nil
	}); err != nil {
		return fmt.Errorf("list tenants with a retention of their own: %w", err)
	}
	deadline := time.Now().Add(purgeBudget)
	for len(walks) > 0 && time.Now().Before(deadline) {
		next := walks[:0]
		for _, w := range walks {
			more, err := m.purgeNext(ctx, w)
			if err != nil {
				return err
			}
			if more {
				next = append(next, w)
			}
		}
		walks = next
	}
	return nil
}

// purgeNext purges the next batch of w's messages in a transaction of its
// own and moves w's cursor past them. It reports whether there may be more;
// false with w.purge.Done unset when the locks it waited for were not
// granted within the lock timeout.
func (m *Maintainer) purgeNext(ctx context.Context, w *tenantWalk) (more bool, err error) {
	var (
		walked  []walkedMessage
		counted TenantPurge
	)
	busy, err := m.locked(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, walkTenant, w.id, w.afterAt, w.afterID, w.purge.Horizon, historyid.Bound(w.purge.Horizon), purgeBatch)
		if err != nil {
			return err
		}
		if walked, err = pgx.CollectRows(rows, pgx.RowToStructByPos[walkedMessage]); err != nil {
			return err
		}
		if len(walked) == 0 {
			return nil
		}
		ids := make([]uuid.UUID, len(walked))
		for i, msg := range walked {
			ids[i] = msg.ID
		}
		if _, err := tx.Exec(ctx, planOnce); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, lockPurgeDeliveries, ids)
		if err != nil {
			return err
		}
		pending := map[uuid.UUID]bool{}
		var (
			messageID uuid.UUID
			isPending bool
		)
		if _, err := pgx.ForEachRow(rows, []any{&messageID, &isPending}, func() error {
			if isPending {
				pending[messageID] = true
			}
			return nil
		}); err != nil {
			return err
		}
		doomed := slices.DeleteFunc(ids, func(id uuid.UUID) bool { return pending[id] })
		counted.Kept = int64(len(pending))
		if len(doomed) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, purgeDeliveries, doomed)
		if err != nil {
			return err
		}
		deliveries, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return err
		}
		counted.Deliveries = int64(len(deliveries))
		tag, err := tx.Exec(ctx, purgeAttempts, doomed)
		if err != nil {
			return err
		}
		counted.Attempts = tag.RowsAffected()
		if _, err := tx.Exec(ctx, purgeReplayDeliveries, deliveries); err != nil {
			return err
		}
		tag, err = tx.Exec(ctx, purgeMessages, doomed)
		counted.Messages = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("purge the history of tenant %q before %s: %w", w.id, w.purge.Horizon.UTC().Format(time.RFC3339), err)
	}
	if busy {
		return false, nil
	}
	p := w.purge
	p.Messages += counted.Messages
	p.Deliveries += counted.Deliveries
	p.Attempts += counted.Attempts
	p.Kept += counted.Kept
	if len(walked) < purgeBatch {
		p.Done = true
		return false, nil
	}
	last := walked[len(walked)-1]
	w.afterAt, w.afterID = last.CreatedAt, last.ID
	return true, nil
}

// walkedMessage is a row of walkTenant.
type walkedMessage struct {
	ID        uuid.UUID
	CreatedAt time.Time
}
