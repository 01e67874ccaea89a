package dispatcher

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"
)

// warmTimeout bounds warmConnections, and warmAcquireTimeout each
// connection it takes; warmParallel is how many it warms at once.
const (
	warmTimeout        = 30 * time.Second
	warmAcquireTimeout = 2 * time.Second
	warmParallel       = 4
)

// warmConnections opens the pool's free connections and has each plan
// the delivery worker's statements (delivery.Worker.Warm) before River
// takes jobs. A dispatcher started under load otherwise paid those plans on each
// connection as its first jobs ran, when every job waits for the first
// loads: on the aged bench database (35 partitions), deliveries stood still
// for the first 2 to 3 s of `steady-aged`. A failure is logged and the
// dispatcher starts all the same: the connections then plan as they go.
// Connections the pool opens later (one replaces another after its
// lifetime) plan on their first job, and so do connections that others
// hold when the dispatcher starts (a pool it shares with the application
// embedding it): it takes only those it can have without waiting, as
// waiting for them held its start up for warmTimeout, with the rest of the
// pool taken, while their holders could need one.
func (d *Dispatcher) warmConnections(ctx context.Context) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	conns := make([]*pgxpool.Conn, 0, d.pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range cap(conns) {
		if st := d.pool.Stat(); st.TotalConns() >= st.MaxConns() && st.IdleConns() == 0 {
			break // the rest are in use elsewhere
		}
		acquireCtx, cancel := context.WithTimeout(ctx, warmAcquireTimeout)
		c, err := d.pool.Acquire(acquireCtx)
		cancel()
		if err != nil {
			d.logger.WarnContext(ctx, "could not take every database connection before starting; the rest plan their statements on their first jobs", "taken", len(conns), "error", err)
			break
		}
		conns = append(conns, c)
	}
	var g errgroup.Group
	g.SetLimit(warmParallel)
	for _, c := range conns {
		g.Go(func() error { return d.worker.Warm(ctx, c.Conn()) })
	}
	if err := g.Wait(); err != nil {
		d.logger.WarnContext(ctx, "could not plan the delivery statements on every connection before starting; they plan on their first jobs", "error", err)
		return
	}
	d.logger.InfoContext(ctx, "database connections warmed", "connections", len(conns), "took", time.Since(start).Round(time.Millisecond))
}
