package soak

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/outbox"
)

// tenant is the producer's tenant.
const tenant = "soak"

// The event types: the main endpoint subscribes to mainType, the lagging
// one to laggingType.
const (
	mainType    = "order.placed"
	laggingType = "report.exported"
)

// publishTick is how often the producer publishes the events due since
// its last publish, in one statement.
const publishTick = 100 * time.Millisecond

// producer publishes a run's events and remembers their ids.
type producer struct {
	pool    *pgxpool.Pool
	cfg     Config
	padding string

	mu      sync.Mutex
	main    []string
	lagging []string
	// start and end bound the steady traffic; zero until it starts and
	// ends.
	start, end time.Time
}

func newProducer(pool *pgxpool.Pool, cfg Config) *producer {
	return &producer{pool: pool, cfg: cfg, padding: strings.Repeat("x", cfg.PayloadBytes)}
}

// backlog publishes the lagging endpoint's events in one statement.
func (p *producer) backlog(ctx context.Context) error {
	if p.cfg.Backlog == 0 {
		return nil
	}
	ids, err := p.publish(ctx, laggingType, 0, p.cfg.Backlog)
	if err != nil {
		return fmt.Errorf("backlog: %w", err)
	}
	p.mu.Lock()
	p.lagging = ids
	p.mu.Unlock()
	return nil
}

// run publishes cfg.Rate events a second for cfg.Traffic, from the next
// partition boundary when cfg.AlignTraffic.
func (p *producer) run(ctx context.Context) error {
	if p.cfg.AlignTraffic {
		boundary := time.Now().Truncate(p.cfg.Interval).Add(p.cfg.Interval)
		if !sleep(ctx, time.Until(boundary)) {
			return ctx.Err()
		}
	}
	start := time.Now()
	p.mu.Lock()
	p.start = start.Round(0) // wall clock, as the run's other times
	p.mu.Unlock()
	ticker := time.NewTicker(publishTick)
	defer ticker.Stop()
	published := 0
	for {
		elapsed := min(time.Since(start), p.cfg.Traffic)
		if due := int(elapsed.Seconds()*float64(p.cfg.Rate)) - published; due > 0 {
			ids, err := p.publish(ctx, mainType, published, due)
			if err != nil {
				return err
			}
			published += due
			p.mu.Lock()
			p.main = append(p.main, ids...)
			p.mu.Unlock()
		}
		if elapsed == p.cfg.Traffic {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
	p.mu.Lock()
	p.end = time.Now().Round(0)
	p.mu.Unlock()
	return nil
}

// publish publishes n events of eventType numbered from first and returns
// their ids.
func (p *producer) publish(ctx context.Context, eventType string, first, n int) ([]string, error) {
	msgs := make([]outbox.Message, n)
	for i := range msgs {
		msgs[i] = outbox.Message{
			Tenant:   tenant,
			Type:     eventType,
			ObjectID: fmt.Sprintf("%s_%d", eventType, first+i),
			Data:     map[string]any{"event": first + i, "padding": p.padding},
		}
	}
	published, err := outbox.PublishManyPool(ctx, p.pool, msgs)
	if err != nil {
		return nil, fmt.Errorf("publish %d %s events: %w", n, eventType, err)
	}
	ids := make([]string, len(published))
	for i, m := range published {
		ids[i] = m.ID.String()
	}
	return ids, nil
}

// published returns the ids published so far, and the bounds of the
// steady traffic.
func (p *producer) published() (main, lagging []string, start, end time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.main...), append([]string(nil), p.lagging...), p.start, p.end
}

// count returns how many events were published so far.
func (p *producer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.main) + len(p.lagging)
}

// phase returns the producer's phase at t.
func (p *producer) phase(t time.Time) Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.start.IsZero() || t.Before(p.start):
		return Backlog
	case p.end.IsZero() || t.Before(p.end):
		return Traffic
	}
	return Settling
}

// publishing reports whether the steady traffic was on at t.
func (p *producer) publishing(t time.Time) bool { return p.phase(t) == Traffic }

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
