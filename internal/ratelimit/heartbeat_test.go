package ratelimit_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/ratelimit"
)

func TestHeartbeatCountsLiveReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)

	// A replica that stopped beating a minute ago no longer counts.
	_, err := pool.Exec(ctx, "INSERT INTO herald.dispatchers (id, heartbeat_at) VALUES ($1, now() - interval '1 minute')", uuid.New())
	require.NoError(t, err)

	first := ratelimit.NewHeartbeat(pool, ratelimit.HeartbeatConfig{})
	second := ratelimit.NewHeartbeat(pool, ratelimit.HeartbeatConfig{})
	require.Equal(t, 1, first.Replicas(), "before its first beat a replica counts itself")

	require.NoError(t, first.Beat(ctx))
	require.Equal(t, 1, first.Replicas())
	require.NoError(t, second.Beat(ctx))
	require.NoError(t, first.Beat(ctx))
	require.Equal(t, 2, first.Replicas())
	require.Equal(t, 2, second.Replicas())

	var rows int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM herald.dispatchers").Scan(&rows))
	require.Equal(t, 2, rows, "the expired replica's row was removed")
}

func TestHeartbeatRunRemovesTheReplicaWhenItStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	staying := ratelimit.NewHeartbeat(pool, ratelimit.HeartbeatConfig{})
	leaving := ratelimit.NewHeartbeat(pool, ratelimit.HeartbeatConfig{Interval: 10 * time.Millisecond})

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		leaving.Run(runCtx)
		close(done)
	}()
	require.Eventually(t, func() bool {
		require.NoError(t, staying.Beat(ctx))
		return staying.Replicas() == 2
	}, 5*time.Second, 10*time.Millisecond)

	stop()
	<-done
	require.NoError(t, staying.Beat(ctx))
	require.Equal(t, 1, staying.Replicas(), "a stopped replica hands its share back at once")
}

// Two replicas that see each other through the heartbeat each take half of
// the limit, so together 50 deliveries at 5/s still span about 10 s.
func TestReplicasShareTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	beats := []*ratelimit.Heartbeat{
		ratelimit.NewHeartbeat(pool, ratelimit.HeartbeatConfig{}),
		ratelimit.NewHeartbeat(pool, ratelimit.HeartbeatConfig{}),
	}
	for range 2 {
		for _, b := range beats {
			require.NoError(t, b.Beat(ctx))
		}
	}
	endpoint := uuid.New()
	var slots []time.Time
	for _, b := range beats {
		limiter := ratelimit.NewLimiter(b)
		for range 25 {
			slots = append(slots, limiter.Reserve(endpoint, 5, t0))
		}
	}
	slices.SortFunc(slots, time.Time.Compare)
	require.Equal(t, 9600*time.Millisecond, slots[len(slots)-1].Sub(t0))
	for start := t0; start.Before(t0.Add(10 * time.Second)); start = start.Add(2 * time.Second) {
		inWindow := 0
		for _, s := range slots {
			if !s.Before(start) && s.Before(start.Add(2*time.Second)) {
				inWindow++
			}
		}
		require.Equal(t, 10, inWindow, "deliveries in the 2 s from %s", start.Sub(t0))
	}
}
