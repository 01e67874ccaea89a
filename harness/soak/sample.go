package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Phase is what the producer was doing when a sample was taken.
type Phase string

// The phases of a run.
const (
	// Backlog: the backlog is published and the run waits for the next
	// partition boundary.
	Backlog Phase = "backlog"
	// Traffic: the producer publishes at Config.Rate.
	Traffic Phase = "traffic"
	// Settling: the traffic is over; the run waits for the deliveries to
	// settle and the sets past retention to go.
	Settling Phase = "settle"
)

// Sample is one point of the size curve.
type Sample struct {
	// Elapsed is the time since the run started.
	Elapsed time.Duration
	// Phase is the producer's phase.
	Phase Phase
	// Published counts the events published so far, backlog included.
	Published int
	// HistoryBytes is the size of every partition of messages, deliveries,
	// attempts and replay_deliveries, indexes and TOAST included.
	HistoryBytes int64
	// RiverJobBytes is the size of River's job table.
	RiverJobBytes int64
	// DatabaseBytes is pg_database_size.
	DatabaseBytes int64
	// Partitions counts the partition sets (herald.history_partitions).
	Partitions int
	// Pending counts the pending deliveries, Undispatched the messages not
	// fanned out yet.
	Pending, Undispatched int
}

// sample reads one point of the curve.
func sample(ctx context.Context, pool *pgxpool.Pool) (Sample, error) {
	var s Sample
	err := pool.QueryRow(ctx, sampleSizes).Scan(&s.HistoryBytes, &s.RiverJobBytes, &s.DatabaseBytes, &s.Partitions, &s.Pending, &s.Undispatched)
	if err != nil {
		return Sample{}, fmt.Errorf("sample the sizes: %w", err)
	}
	return s, nil
}
