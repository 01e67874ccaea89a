package batcher

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var testConfig = Config{MaxBatch: 512, Flushers: 1, Timeout: time.Minute}

func TestBatcherSharesRoundTrips(t *testing.T) {
	t.Parallel()

	var flushes, running, peak atomic.Int32
	var mu sync.Mutex
	var largest int
	b := New(Config{MaxBatch: 10, Flushers: 1, Timeout: time.Minute}, func(_ context.Context, reqs []int) ([]int, error) {
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

	const callers = 200
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := b.Do(context.Background(), i)
			require.NoError(t, err)
			require.Equal(t, 2*i, got, "each caller gets its own result")
		}()
	}
	wg.Wait()
	require.Less(t, int(flushes.Load()), callers, "requests that waited went together")
	require.LessOrEqual(t, largest, 10, "no batch is larger than max")
	require.LessOrEqual(t, int(peak.Load()), 1, "at most Flushers round trips at once")

	// The last flusher closes its callers' results before it looks for
	// more work and ends.
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.running == 0 && len(b.pending) == 0
	}, 5*time.Second, time.Millisecond, "flushers end when nothing is pending")
}

func TestBatcherFailsTheWholeBatch(t *testing.T) {
	t.Parallel()

	boom := errors.New("connection reset")
	b := New(testConfig, func(context.Context, []string) ([]string, error) { return nil, boom })
	_, err := b.Do(context.Background(), "a")
	require.ErrorIs(t, err, boom)
}

func TestBatcherCallerMayGiveUp(t *testing.T) {
	t.Parallel()

	release := make(chan struct{})
	b := New(testConfig, func(_ context.Context, reqs []int) ([]int, error) {
		<-release
		return reqs, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Do(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	got, err := b.Do(context.Background(), 2)
	require.NoError(t, err)
	require.Equal(t, 2, got, "the batcher still works after a caller gave up")
}

// DoAll's requests share round trips with each other and with other
// callers', and its results come back in the order of its requests.
func TestBatcherDoAllKeepsOrder(t *testing.T) {
	t.Parallel()

	var flushes atomic.Int32
	b := New(Config{MaxBatch: 3, Flushers: 1, Timeout: time.Minute}, func(_ context.Context, reqs []int) ([]int, error) {
		flushes.Add(1)
		out := make([]int, len(reqs))
		for i, r := range reqs {
			out[i] = -r
		}
		return out, nil
	})
	got, err := b.DoAll(context.Background(), []int{1, 2, 3, 4, 5, 6, 7})
	require.NoError(t, err)
	require.Equal(t, []int{-1, -2, -3, -4, -5, -6, -7}, got)
	require.LessOrEqual(t, int(flushes.Load()), 3, "seven requests in round trips of up to three")

	got, err = b.DoAll(context.Background(), nil)
	require.NoError(t, err)
	require.Empty(t, got, "no requests, no round trip")
}

func TestNewRejectsSizesOutsideTheRules(t *testing.T) {
	t.Parallel()

	flush := func(_ context.Context, reqs []int) ([]int, error) { return reqs, nil }
	for _, cfg := range []Config{{Flushers: 1, Timeout: time.Second}, {MaxBatch: 1, Timeout: time.Second}, {MaxBatch: 1, Flushers: 1}} {
		require.Panics(t, func() { New(cfg, flush) }, "%+v", cfg)
	}
}
