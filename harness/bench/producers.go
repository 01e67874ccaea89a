package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/outbox"
)

// eventType is the type every bench event has; endpoints subscribe to all.
const eventType = "invoice.paid"

// producers publish events through outbox.Publish from concurrent
// goroutines, each in transactions of its own, as an application's request
// handlers would.
type producers struct {
	pool    *pgxpool.Pool
	rec     *recorder
	tenants []string
	// count is how many producer goroutines publish at once.
	count int
	// perTx is how many events one transaction publishes.
	perTx int
	// objects is how many objects the events are about in turn; zero
	// means each its own (see Scenario.Objects).
	objects int

	next atomic.Int64
}

// event returns the i-th event: tenants take turns, and every event is
// about an object of its own, or about objects in turn when there are
// p.objects.
func (p *producers) event(i int64) outbox.Message {
	object := i
	if p.objects > 0 {
		object = i % int64(p.objects)
	}
	return outbox.Message{
		Tenant:   p.tenants[i%int64(len(p.tenants))],
		Type:     eventType,
		ObjectID: fmt.Sprintf("inv_%d", object),
		Data: map[string]any{
			"id":       fmt.Sprintf("inv_%d", i),
			"amount":   4200 + i%1000,
			"currency": "eur",
			"customer": fmt.Sprintf("cus_%d", i%5000),
			"lines":    []map[string]any{{"description": "Pro plan", "quantity": 1, "unit_amount": 4200}},
		},
	}
}

// publishAll publishes n events as fast as the producers can, perTx per
// transaction, and returns when all are committed.
func (p *producers) publishAll(ctx context.Context, n int) error {
	return p.run(ctx, func(ctx context.Context) (int64, int, bool) {
		first := p.next.Add(int64(p.perTx)) - int64(p.perTx)
		if first >= int64(n) {
			return 0, 0, false
		}
		return first, int(min(int64(p.perTx), int64(n)-first)), true
	})
}

// publishAtRate publishes perSecond events per second, one per transaction,
// for d. An event is published at its slot or, when the producers have
// fallen behind, as soon as one is free; the achieved rate is what the
// recorder counted.
func (p *producers) publishAtRate(ctx context.Context, perSecond float64, d time.Duration) error {
	start := time.Now()
	total := int64(perSecond * d.Seconds())
	return p.run(ctx, func(ctx context.Context) (int64, int, bool) {
		i := p.next.Add(1) - 1
		if i >= total {
			return 0, 0, false
		}
		slot := start.Add(time.Duration(float64(i) / perSecond * float64(time.Second)))
		if wait := time.Until(slot); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, 0, false
			case <-t.C:
			}
		}
		return i, 1, true
	})
}

// run starts the producer goroutines; each asks take for the next events to
// publish until it says there are none.
func (p *producers) run(ctx context.Context, take func(context.Context) (first int64, n int, ok bool)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range p.count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				first, n, ok := take(ctx)
				if !ok {
					return
				}
				if err := p.publish(ctx, first, n); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// publish commits events first to first+n-1 in one transaction and records
// the moment the commit returned and how long the transaction took.
func (p *producers) publish(ctx context.Context, first int64, n int) error {
	ids := make([]uuid.UUID, 0, n)
	begun := time.Now()
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("publish: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for i := first; i < first+int64(n); i++ {
		published, err := outbox.Publish(ctx, tx, p.event(i))
		if err != nil {
			return err
		}
		ids = append(ids, published.ID)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("publish: commit: %w", err)
	}
	now := time.Now()
	p.rec.committed(ids, now)
	p.rec.transacted(now, now.Sub(begun))
	return nil
}
