package delivery

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBatcherSharesRoundTrips(t *testing.T) {
	t.Parallel()

	var flushes, running, peak atomic.Int32
	var mu sync.Mutex
	var largest int
	b := newBatcher(func(_ context.Context, reqs []int) ([]int, error) {
		flushes.Add(1)
		now := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		mu.Lock()
		largest = max(largest, len(reqs))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // a round trip
		out := make([]int, len(reqs))
		for i, r := range reqs {
			out[i] = r * 2
		}
		return out, nil
	})
	b.max = 10

	const callers = 200
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := b.do(context.Background(), i)
			require.NoError(t, err)
			require.Equal(t, 2*i, got, "each caller gets its own result")
		}()
	}
	wg.Wait()
	require.Less(t, int(flushes.Load()), callers, "requests that waited went together")
	require.LessOrEqual(t, largest, 10, "no batch is larger than max")
	require.LessOrEqual(t, int(peak.Load()), batchFlushers, "at most batchFlushers round trips at once")

	b.mu.Lock()
	defer b.mu.Unlock()
	require.Zero(t, b.running, "flushers end when nothing is pending")
	require.Empty(t, b.pending)
}

func TestBatcherFailsTheWholeBatch(t *testing.T) {
	t.Parallel()

	boom := errors.New("connection reset")
	b := newBatcher(func(context.Context, []string) ([]string, error) { return nil, boom })
	_, err := b.do(context.Background(), "a")
	require.ErrorIs(t, err, boom)
}

func TestBatcherCallerMayGiveUp(t *testing.T) {
	t.Parallel()

	release := make(chan struct{})
	b := newBatcher(func(_ context.Context, reqs []int) ([]int, error) {
		<-release
		return reqs, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.do(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	got, err := b.do(context.Background(), 2)
	require.NoError(t, err)
	require.Equal(t, 2, got, "the batcher still works after a caller gave up")
}
