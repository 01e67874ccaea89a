package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/outbox"
)

// tenant is the producer's tenant in Herald.
const tenant = "chaos"

// eventType is the type of the events the consumer's endpoint receives,
// goneType the type of those only the second endpoint (the one that
// answers 410 Gone for a while) receives, orderedType the type of those
// only the third endpoint (ordering object) receives.
const (
	eventType   = "object.updated"
	goneType    = "object.archived"
	orderedType = "object.moved"
)

// typeOf is the type of event i: goneType for a share cfg.GoneShare of
// the events, orderedType for a share cfg.OrderedShare of the rest, never
// for the poison event.
func typeOf(cfg Config, i int) string {
	if i == cfg.Poison {
		return eventType
	}
	if unit(cfg.Seed, "gone", strconv.Itoa(i)) < cfg.GoneShare {
		return goneType
	}
	if unit(cfg.Seed, "ordered", strconv.Itoa(i)) < cfg.OrderedShare {
		return orderedType
	}
	return eventType
}

// maxProducerBackoff bounds the pause before a producer retries a
// transaction that failed (the database was down).
const maxProducerBackoff = time.Second

// producers publish the events of a run. Each event is one transaction of
// the producer's: it bumps the object's sequence number in the producer's
// own table and publishes the event with that number, under an idempotency
// key, so a transaction retried after an error whose outcome is unknown
// (the connection broke during COMMIT) publishes nothing twice.
type producers struct {
	pool *pgxpool.Pool
	cfg  Config
	next atomic.Int64

	mu         sync.Mutex
	rolledBack []uuid.UUID
	retries    int
}

// rolledBackIDs returns the ids of the events published in transactions
// that rolled back.
func (p *producers) rolledBackIDs() []uuid.UUID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.rolledBack)
}

func objectID(i int) string { return fmt.Sprintf("obj_%04d", i) }

// run publishes cfg.Events events from cfg.Producers goroutines and returns
// when all are committed, or with the first error that is not the
// database's being away.
func (p *producers) run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, p.cfg.Producers)
	for g := range p.cfg.Producers {
		wg.Go(func() {
			for {
				i := int(p.next.Add(1) - 1)
				if i >= p.cfg.Events || ctx.Err() != nil {
					return
				}
				if err := p.publishEvent(ctx, i); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// publishEvent commits event i, first publishing and rolling back another
// event when the seed says so. It retries until it succeeds or ctx ends.
func (p *producers) publishEvent(ctx context.Context, i int) error {
	object := objectID(int(unit(p.cfg.Seed, "object", strconv.Itoa(i)) * float64(p.cfg.Objects)))
	rollback := unit(p.cfg.Seed, "rollback", strconv.Itoa(i)) < p.cfg.Rollback
	for try := 0; ; try++ {
		var err error
		if rollback {
			err = p.publishRolledBack(ctx, i, object)
			rollback = err != nil
		}
		if err == nil {
			err = p.commitEvent(ctx, i, object)
		}
		var invalid *outbox.ValidationError
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &invalid):
			return fmt.Errorf("event %d: %w", i, err)
		}
		p.mu.Lock()
		p.retries++
		p.mu.Unlock()
		sleep(ctx, min(maxProducerBackoff, 20*time.Millisecond<<min(try, 10)))
	}
}

// commitEvent bumps object's sequence number and publishes event i with it
// in one transaction.
func (p *producers) commitEvent(ctx context.Context, i int, object string) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var seq int64
	if err := tx.QueryRow(ctx, bumpProducerObject, object).Scan(&seq); err != nil {
		return fmt.Errorf("bump %s: %w", object, err)
	}
	published, err := outbox.Publish(ctx, tx, outbox.Message{
		Tenant:         tenant,
		Type:           typeOf(p.cfg, i),
		ObjectID:       object,
		Data:           map[string]int64{"seq": seq, "event": int64(i)},
		IdempotencyKey: "event-" + strconv.Itoa(i),
	})
	if err != nil {
		return err
	}
	if published.Duplicate {
		// An earlier try committed although its COMMIT reported an error;
		// this one's bump must not count.
		return nil
	}
	return tx.Commit(ctx)
}

// publishRolledBack publishes an event about object and rolls the
// transaction back, as a producer does whose business change failed.
func (p *producers) publishRolledBack(ctx context.Context, i int, object string) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, bumpProducerObject, object); err != nil {
		return fmt.Errorf("bump %s: %w", object, err)
	}
	published, err := outbox.Publish(ctx, tx, outbox.Message{
		Tenant:   tenant,
		Type:     eventType,
		ObjectID: object,
		Data:     map[string]int64{"seq": -1, "event": int64(i)},
	})
	if err != nil {
		return err
	}
	// Recorded before the rollback: a rollback that fails because the
	// connection broke still never commits.
	p.mu.Lock()
	p.rolledBack = append(p.rolledBack, published.ID)
	p.mu.Unlock()
	_ = tx.Rollback(ctx)
	return nil
}

// createProducerTable creates the producer's own table in Herald's
// database, one row per object.
func createProducerTable(ctx context.Context, pool *pgxpool.Pool, objects int) error {
	ids := make([]string, objects)
	for i := range ids {
		ids[i] = objectID(i)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, createProducerObjects); err != nil {
			return fmt.Errorf("create the producer's table: %w", err)
		}
		if _, err := tx.Exec(ctx, insertProducerObjects, ids); err != nil {
			return fmt.Errorf("insert the producer's objects: %w", err)
		}
		return nil
	})
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
