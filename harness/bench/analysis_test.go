package bench

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/filter"
)

func TestSummariseNearestRank(t *testing.T) {
	t.Parallel()
	var latencies []time.Duration
	for i := 100; i >= 1; i-- {
		latencies = append(latencies, time.Duration(i)*time.Millisecond)
	}
	l := summarise(latencies)
	require.Equal(t, Latency{Count: 100, P50: 50, P95: 95, P99: 99, Max: 100}, l)
	require.Equal(t, Latency{}, summarise(nil))
}

func TestTransactionLatencyLeavesOutTheWarmup(t *testing.T) {
	t.Parallel()
	txs := []transaction{
		{at: 500 * time.Millisecond, took: 90 * time.Millisecond}, // in the warm-up
		{at: 2 * time.Second, took: 2 * time.Millisecond},
		{at: 3 * time.Second, took: 4 * time.Millisecond},
	}
	got := transactionLatency(txs, window{start: 0, warmup: time.Second})
	require.Equal(t, Latency{Count: 2, P50: 2, P95: 4, P99: 4, Max: 4}, got)
}

func TestAnalyseJoinsCommitsToFirstAcceptedArrival(t *testing.T) {
	t.Parallel()
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	commits := map[uuid.UUID]time.Duration{a: 0, b: 10 * time.Millisecond, c: 5 * time.Second}
	arrivals := []arrival{
		{message: a, endpoint: 0, at: 30 * time.Millisecond, status: 500, measured: true},
		{message: a, endpoint: 0, at: 40 * time.Millisecond, status: 200, measured: true},
		{message: a, endpoint: 0, at: 45 * time.Millisecond, status: 200, measured: true}, // a duplicate
		{message: b, endpoint: 0, at: 30 * time.Millisecond, status: 200, measured: true},
		{message: b, endpoint: 1, at: 90 * time.Millisecond, status: 0, measured: false}, // a hanging endpoint
		{message: c, endpoint: 0, at: 5*time.Second + 20*time.Millisecond, status: 200, measured: true},
	}
	got := analyse(commits, arrivals, window{start: 0, expected: 3})
	require.Equal(t, 3, got.delivered)
	require.Equal(t, 1, got.duplicates)
	require.InDelta(t, 5.0/3, got.attempts, 1e-9, "the failed attempt and the duplicate count")
	require.Equal(t, Latency{Count: 3, P50: 20, P95: 40, P99: 40, Max: 40}, got.latency)
	require.Equal(t, 5*time.Second+20*time.Millisecond, got.drain)
	require.Len(t, got.series, 6)
	require.Equal(t, 2, got.series[0].Delivered)
	require.Equal(t, 1, got.series[5].Delivered)

	// With a one-second warm-up, events committed in it are not measured.
	got = analyse(commits, arrivals, window{start: 0, warmup: time.Second, expected: 3})
	require.Equal(t, 3, got.delivered)
	require.Equal(t, Latency{Count: 1, P50: 20, P95: 20, P99: 20, Max: 20}, got.latency)
}

func TestSustainedRateSkipsWarmupAndTail(t *testing.T) {
	t.Parallel()
	// 100 deliveries per second for 10 s, then one straggler at 60 s.
	var sorted []time.Duration
	for i := range 1000 {
		sorted = append(sorted, time.Duration(i)*10*time.Millisecond)
	}
	sorted = append(sorted, 60*time.Second)
	rate := sustainedRate(sorted, window{start: 0, warmup: 2 * time.Second, expected: 1001})
	require.InDelta(t, 100, rate, 2)
}

func TestExpectedDeliveries(t *testing.T) {
	t.Parallel()
	s := Scenario{Tenants: 20, Hanging: 0.1, Events: 105}
	specs := endpointSpecs(s, true)
	require.Len(t, specs, 20)
	require.Equal(t, hangUntilTimeout, specs[19].behaviour)
	require.False(t, specs[18].measured)
	require.True(t, specs[17].measured)
	// Tenants 0-4 get 6 events, 5-19 get 5; tenants 18 and 19 are not
	// measured.
	require.Equal(t, 105-10, expectedDeliveries(s, specs))

	fanout := Scenario{EndpointsPerTenant: 100, Rate: 20, Duration: 30 * time.Second}
	require.Equal(t, 600*100, expectedDeliveries(fanout, endpointSpecs(fanout, false)))

	filtered, ok := find("filtered")
	require.True(t, ok)
	require.Equal(t, 12_000*5, expectedDeliveries(filtered, endpointSpecs(filtered, false)))
	require.Equal(t, 200, int(float64(filtered.Shrunk(200).events())*filtered.deliveriesPerEvent()))
}

// The filtered scenario's endpoint filters take the events filterBucket
// says, a tenth each, judged by package filter on the body producers send.
func TestFilteredEndpointFiltersTakeATenth(t *testing.T) {
	t.Parallel()
	p := &producers{tenants: []string{"t"}}
	for e := range filterBuckets {
		f, err := filter.Parse(filteredEndpointFilter(e))
		require.NoError(t, err)
		matched := 0
		for i := range 1000 {
			m := p.event(int64(i))
			body, err := json.Marshal(map[string]any{"type": m.Type, "data": m.Data})
			require.NoError(t, err)
			doc, err := filter.Decode(body)
			require.NoError(t, err)
			passes := f.Match(doc)
			require.Equal(t, filterBucket(i) == e, passes, "endpoint %d, event %d", e, i)
			if passes {
				matched++
			}
		}
		require.Equal(t, 100, matched, "endpoint %d", e)
	}
}

func TestShrunk(t *testing.T) {
	t.Parallel()
	fanout, ok := find("fanout")
	require.True(t, ok)
	small := fanout.Shrunk(200)
	require.Equal(t, 200, small.events()*small.endpointsPerTenant())
	burst, _ := find("burst")
	require.Equal(t, 200, burst.Shrunk(200).Events)
	require.Equal(t, burst, burst.Shrunk(0))
}
