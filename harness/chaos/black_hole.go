package chaos

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/blackhole"
	"github.com/heraldhq/herald/internal/database"
)

// blackHoled is the dispatcher whose database connections go through the
// black-hole proxy.
const blackHoled = 0

// throughProxy returns databaseURL with its host replaced by the proxy's.
func throughProxy(databaseURL string, proxy *blackhole.Proxy) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", fmt.Errorf("black hole: %w", err)
	}
	u.Host = proxy.Addr()
	return u.String(), nil
}

// recoveryBound is dispatcher.RecoveryBound at the dispatchers' settings,
// computed on a pool opened as theirs is (dispatcherArgs).
func recoveryBound(ctx context.Context, cfg Config, databaseURL string) (time.Duration, error) {
	pool, err := database.Open(ctx, databaseURL, database.Options{
		MaxConns: int32(cfg.MaxConns),
		Timeouts: database.Timeouts{Connect: dbConnectTimeout, Ping: dbPingTimeout, IdleInTransaction: dbIdleInTransactionTimeout},
	})
	if err != nil {
		return 0, fmt.Errorf("black hole: %w", err)
	}
	defer pool.Close()
	return dispatcher.RecoveryBound(dispatcher.Config{Pool: pool, FanOutTimeout: fanOutTimeout, PollInterval: pollInterval}), nil
}

// blackHoleResult is what one black hole did.
type blackHoleResult struct {
	silent, recovery, bound time.Duration
	recovered               bool
}

// breakConnections makes dispatcher blackHoled's connections black holes
// for cfg.BlackHole, then lets the proxy forward new connections and waits
// until that dispatcher starts a job again: a River client other than
// those that started jobs while it was silent. It waits up to bound.
func breakConnections(ctx context.Context, cfg Config, proxy *blackhole.Proxy, herald *pgxpool.Pool, bound time.Duration) (blackHoleResult, error) {
	res := blackHoleResult{silent: cfg.BlackHole, bound: bound}
	start := time.Now()
	proxy.BlackHole()
	sleep(ctx, cfg.BlackHole)
	// A fetch the dispatcher sent just before the black hole may have
	// committed after it: look only at jobs started a while later.
	others, err := clientsAttempting(ctx, herald, start.Add(min(time.Second, cfg.BlackHole/2)))
	if err != nil {
		return res, err
	}
	proxy.ForwardNew()
	forwarded := time.Now()
	for time.Since(forwarded) < bound {
		sleep(ctx, pollEvery)
		if err := ctx.Err(); err != nil {
			return res, err
		}
		now, err := clientsAttempting(ctx, herald, forwarded)
		if err != nil {
			return res, err
		}
		if slices.ContainsFunc(now, func(id string) bool { return !slices.Contains(others, id) }) {
			res.recovered, res.recovery = true, time.Since(forwarded)
			return res, nil
		}
	}
	res.recovery = time.Since(forwarded)
	return res, nil
}

// clientsAttempting lists the River clients (one per dispatcher process)
// that started a job after since.
func clientsAttempting(ctx context.Context, herald *pgxpool.Pool, since time.Time) ([]string, error) {
	rows, err := herald.Query(ctx, selectClientsAttempting, since)
	if err != nil {
		return nil, fmt.Errorf("black hole: read River's jobs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("black hole: read River's jobs: %w", err)
	}
	return ids, nil
}
