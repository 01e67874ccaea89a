package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/receiver"
)

// source names the simulated provider in the receiver module's keys.
const source = "provider"

// A design is one way to write the receiving handler's logic, run after
// the signature was verified and the body decoded. A nil error answers
// 200; an error answers 500, which the sender retries.
type design struct {
	name   string
	handle func(ctx context.Context, db *pgxpool.Pool, m message) error
}

// errKeyTaken is check-then-insert's own failure: the key insert hit the
// primary key after the side effect already ran. The handler answers 500.
var errKeyTaken = errors.New("dedupe key already stored")

// A guard decides whether a plan update may replace the stored plan, given
// the stored version and creation second.
type guard func(m message, storedVersion, storedCreated int64) bool

func always(message, int64, int64) bool { return true }

// designs are the six handler designs, in table order.
func designs() []design {
	return []design{
		{"naive", naive},
		{"check-then-insert", checkThenInsert},
		{"atomic insert", atomic(always)},
		{"created >=", atomic(func(m message, _, created int64) bool { return m.created >= created })},
		{"created >", atomic(func(m message, _, created int64) bool { return m.created > created })},
		{"version guard", versionGuard},
	}
}

// naive applies every delivery.
func naive(ctx context.Context, db *pgxpool.Pool, m message) error {
	return applyAlone(ctx, db, m)
}

// checkThenInsert looks the key up, applies, then stores the key: two
// copies that both pass the look-up both apply, and the later key insert
// fails after the effect.
func checkThenInsert(ctx context.Context, db *pgxpool.Pool, m message) error {
	var seen bool
	if err := db.QueryRow(ctx, selectProcessed, m.id).Scan(&seen); err != nil {
		return fmt.Errorf("look up %s: %w", m.id, err)
	}
	if seen {
		return nil
	}
	if err := applyAlone(ctx, db, m); err != nil {
		return err
	}
	_, err := db.Exec(ctx, insertProcessed, m.id)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return fmt.Errorf("store key %s: %w", m.id, errKeyTaken)
	}
	if err != nil {
		return fmt.Errorf("store key %s: %w", m.id, err)
	}
	return nil
}

// atomic claims the key with the receiver module in the side effect's
// transaction and applies only the first copy; allow orders plan updates.
func atomic(allow guard) func(ctx context.Context, db *pgxpool.Pool, m message) error {
	return func(ctx context.Context, db *pgxpool.Pool, m message) error {
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			first, err := receiver.Claim(ctx, tx, source, m.id)
			if err != nil || !first {
				return err
			}
			return apply(ctx, tx, m, allow)
		})
	}
}

// versionGuard is the atomic claim plus the receiver module's version
// guard: a plan update applies only if its version is above the highest
// one applied for the account.
func versionGuard(ctx context.Context, db *pgxpool.Pool, m message) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		first, err := receiver.Claim(ctx, tx, source, m.id)
		if err != nil || !first {
			return err
		}
		if m.kind == Plan {
			newer, err := receiver.ApplyIfNewer(ctx, tx, source, m.object, m.version)
			if err != nil || !newer {
				return err
			}
		}
		return apply(ctx, tx, m, always)
	})
}

// applyAlone runs the side effect with no dedupe around it. A plan write
// still takes its own short transaction, only so the log records exactly
// which version it replaced.
func applyAlone(ctx context.Context, db *pgxpool.Pool, m message) error {
	if m.kind == Credit {
		return addCredit(ctx, db, m)
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return writePlan(ctx, tx, m, always) })
}

func apply(ctx context.Context, tx pgx.Tx, m message, allow guard) error {
	if m.kind == Credit {
		return addCredit(ctx, tx, m)
	}
	return writePlan(ctx, tx, m, allow)
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func addCredit(ctx context.Context, db execer, m message) error {
	if _, err := db.Exec(ctx, addCredits, m.id, m.account, m.credits); err != nil {
		return fmt.Errorf("credit %s: %w", m.id, err)
	}
	return nil
}

// writePlan sets the plan if allow agrees, logging the version replaced.
func writePlan(ctx context.Context, tx pgx.Tx, m message, allow guard) error {
	var version, created int64
	if err := tx.QueryRow(ctx, lockPlan, m.account).Scan(&version, &created); err != nil {
		return fmt.Errorf("plan %s: read %s: %w", m.id, m.object, err)
	}
	if !allow(m, version, created) {
		return nil // stale by this design's rule: done, not applied
	}
	if _, err := tx.Exec(ctx, setPlan, m.id, m.account, m.plan, m.version, m.created, version); err != nil {
		return fmt.Errorf("plan %s: %w", m.id, err)
	}
	return nil
}
