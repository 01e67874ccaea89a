package sim

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/receiver"
)

// CrashRow is one crash design's result.
type CrashRow struct {
	Design string
	// Events is how many credit events were sent; Crashes how often the
	// receiver died between key and side effect.
	Events, Crashes int
	// Keys is how many dedupe keys are stored at the end; Applied how many
	// events had their effect; Lost how many never did.
	Keys, Applied, Lost int
	Ledger, Expected    int64
}

// The two crash designs.
const (
	crashSplit = "insert key, then side effect"
	crashOneTx = "insert key + side effect, one tx"
)

// RunCrash sends cfg.CrashEvents credit events to a receiver process that,
// with chance cfg.Crash per delivery, dies after taking the dedupe key
// (receiver.Claim) and before the side effect. Dying is real: the
// process's Postgres connection is cut without a commit, and a new process
// with a new connection takes over while the sender retries the event.
// In the split design the key committed on its own before the crash; in
// the other the key and the effect share a transaction that Postgres rolls
// back when the connection drops.
func RunCrash(ctx context.Context, cfg Config, newDB NewDatabase) ([]CrashRow, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	designs := []string{crashSplit, crashOneTx}
	pools := make([]*pgxpool.Pool, 0, len(designs))
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	for _, name := range []string{"crash_split", "crash_one_tx"} {
		pool, err := openFresh(ctx, newDB, name, cfg)
		if err != nil {
			return nil, err
		}
		pools = append(pools, pool)
	}
	rows := make([]CrashRow, len(designs))
	g, gctx := errgroup.WithContext(ctx)
	for i, design := range designs {
		g.Go(func() error {
			row, err := runCrash(gctx, cfg, pools[i], design)
			if err != nil {
				return fmt.Errorf("crash design %q: %w", design, err)
			}
			rows[i] = row
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return rows, nil
}

// crashDelivery is one attempt at one crash event.
type crashDelivery struct {
	id      string
	account int
	attempt int
}

func runCrash(ctx context.Context, cfg Config, pool *pgxpool.Pool, design string) (CrashRow, error) {
	connCfg := pool.Config().ConnConfig

	proc, err := pgx.ConnectConfig(ctx, connCfg)
	if err != nil {
		return CrashRow{}, fmt.Errorf("start receiver process: %w", err)
	}
	defer func() { _ = proc.Close(context.WithoutCancel(ctx)) }()

	row := CrashRow{Design: design, Events: cfg.CrashEvents, Expected: int64(cfg.CrashEvents) * creditAmount}
	queue := make([]crashDelivery, 0, cfg.CrashEvents)
	for i := range cfg.CrashEvents {
		queue = append(queue, crashDelivery{id: fmt.Sprintf("evt_c%05d", i), account: i % cfg.Accounts, attempt: 1})
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		crash := keyed(cfg.Seed, "crash", d.id, itoa(d.attempt)) < cfg.Crash
		crashed, err := deliverToProcess(ctx, proc, design, d, crash)
		if err != nil {
			return CrashRow{}, err
		}
		if !crashed {
			continue
		}
		row.Crashes++
		if proc, err = restart(ctx, proc, connCfg); err != nil {
			return CrashRow{}, err
		}
		d.attempt++
		queue = append(queue, d) // no answer came back: the sender retries
	}

	if err := pool.QueryRow(ctx, countClaims).Scan(&row.Keys); err != nil {
		return CrashRow{}, fmt.Errorf("count keys: %w", err)
	}
	if err := pool.QueryRow(ctx, countDistinct).Scan(&row.Applied); err != nil {
		return CrashRow{}, fmt.Errorf("count applied: %w", err)
	}
	if err := pool.QueryRow(ctx, sumCredits).Scan(&row.Ledger); err != nil {
		return CrashRow{}, fmt.Errorf("sum credits: %w", err)
	}
	row.Lost = row.Events - row.Applied
	return row, nil
}

// deliverToProcess handles one delivery in the receiver process proc. With
// crash set, the process dies right after the key insert: it returns
// crashed with the transaction, if any, still open; restart finishes it off.
func deliverToProcess(ctx context.Context, proc *pgx.Conn, design string, d crashDelivery, crash bool) (crashed bool, err error) {
	m := message{id: d.id, kind: Credit, account: d.account, credits: creditAmount}
	tx, err := proc.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("deliver %s: %w", d.id, err)
	}
	first, err := receiver.Claim(ctx, tx, source, d.id)
	if err != nil {
		_ = tx.Rollback(ctx)
		return false, err
	}
	if design == crashSplit || !first {
		// The split design commits the key by itself; a duplicate has
		// nothing else to do.
		if err := tx.Commit(ctx); err != nil {
			return false, fmt.Errorf("deliver %s: commit key: %w", d.id, err)
		}
		if !first {
			return false, nil
		}
		if crash {
			return true, nil
		}
		return false, addCredit(ctx, proc, m)
	}
	if crash {
		return true, nil
	}
	if err := addCredit(ctx, tx, m); err != nil {
		_ = tx.Rollback(ctx)
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("deliver %s: commit: %w", d.id, err)
	}
	return false, nil
}

// restart kills the receiver process's connection the way a dying process
// does, closing its socket with no commit and no goodbye to the server, and
// connects a fresh process. Postgres rolls back whatever was open.
func restart(ctx context.Context, proc *pgx.Conn, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	hijacked, err := proc.PgConn().Hijack()
	if err != nil {
		return nil, fmt.Errorf("crash the receiver process: %w", err)
	}
	if err := hijacked.Conn.Close(); err != nil {
		return nil, fmt.Errorf("crash the receiver process: %w", err)
	}
	next, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("restart the receiver process: %w", err)
	}
	return next, nil
}
