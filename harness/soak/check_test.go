package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/retention"
)

func curve(sizes ...int64) []Sample {
	samples := make([]Sample, len(sizes))
	for i, size := range sizes {
		samples[i] = Sample{Elapsed: time.Duration(i) * time.Minute, HistoryBytes: size}
	}
	return samples
}

func history(s Sample) int64 { return s.HistoryBytes }

// History (or a database) that grows at a steady pace fails the
// levelling-off check; a sawtooth held by retention passes it.
func TestLevelComparesTheLastThirdWithTheMiddle(t *testing.T) {
	t.Parallel()
	growing := level(curve(0, 10, 20, 30, 40, 50, 60), 0, 6*time.Minute, history)
	require.Equal(t, int64(30), growing.MiddleMax, "the middle third is [2m, 4m)")
	require.Equal(t, int64(60), growing.LastMax)
	require.InDelta(t, 2, growing.Ratio(), 1e-9, "1.5 sampled continuously; more with samples apart")

	sawtooth := level(curve(0, 10, 20, 30, 20, 30, 20, 30, 20, 31), 0, 9*time.Minute, history)
	require.Equal(t, int64(30), sawtooth.MiddleMax)
	require.Equal(t, int64(31), sawtooth.LastMax)

	outside := level(append(curve(0, 10, 20, 30), Sample{Elapsed: time.Hour, HistoryBytes: 1000}), 0, 3*time.Minute, history)
	require.Equal(t, 4, outside.Samples, "samples after the traffic are left out")
	require.Equal(t, int64(30), outside.LastMax)

	r := &Report{Config: Full(), Level: growing, DatabaseLevel: sawtooth, Drops: []Drop{{Publishing: true, PendingAfter: 3}, {Publishing: true, PendingAfter: 1}}, Kept: map[string]retention.Outcome{"a": retention.Pending}}
	r.Drops[0].Suffix = "a"
	check(r)
	require.Len(t, r.Problems, 1)
	require.Contains(t, r.Problems[0], "history did not level off")

	r = &Report{Config: Full(), Level: sawtooth, DatabaseLevel: growing, Drops: r.Drops, Kept: r.Kept}
	check(r)
	require.Len(t, r.Problems, 1)
	require.Contains(t, r.Problems[0], "the database did not level off")
}

func TestReadOutcomesFromTheDispatchersLog(t *testing.T) {
	t.Parallel()
	log := `{"time":"2026-12-04T14:00:00.5Z","level":"INFO","msg":"dispatcher started"}
{"time":"2026-12-04T14:00:01Z","level":"INFO","msg":"history partitions past retention kept","suffix":"20261204_135500","reason":"pending","horizon":"x"}
not json: a panic's trace
{"time":"2026-12-04T14:00:31Z","level":"INFO","msg":"history partitions dropped","suffix":"20261204_135500","horizon":"x"}
`
	got, err := readOutcomes(strings.NewReader(log))
	require.NoError(t, err)
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339Nano, s); return tm }
	require.Equal(t, []PassOutcome{
		{At: at("2026-12-04T14:00:01Z"), Suffix: "20261204_135500", Outcome: retention.Pending},
		{At: at("2026-12-04T14:00:31Z"), Suffix: "20261204_135500", Outcome: retention.Dropped},
	}, got)
}

// A drop counts as made in flight when the traffic was on and the first
// sample after it found deliveries pending; a set kept before and dropped
// later is paired with its reason.
func TestDropsPairsOutcomesWithSamples(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 12, 4, 14, 0, 0, 0, time.UTC)
	samples := []Sample{{Elapsed: 10 * time.Second, Pending: 5}, {Elapsed: 20 * time.Second, Pending: 0}, {Elapsed: 30 * time.Second, Pending: 7}}
	outcomes := []PassOutcome{
		{At: started.Add(5 * time.Second), Suffix: "a", Outcome: retention.Pending},
		{At: started.Add(6 * time.Second), Suffix: "b", Outcome: retention.Busy},
		{At: started.Add(15 * time.Second), Suffix: "a", Outcome: retention.Dropped},
		{At: started.Add(25 * time.Second), Suffix: "b", Outcome: retention.Dropped},
		{At: started.Add(35 * time.Second), Suffix: "c", Outcome: retention.Dropped},
	}
	publishing := func(at time.Time) bool { return at.Before(started.Add(30 * time.Second)) }
	got, kept := drops(outcomes, samples, started, publishing)
	require.Equal(t, map[string]retention.Outcome{"a": retention.Pending}, kept, "busy is not a reason to keep")
	require.Equal(t, []Drop{
		{Elapsed: 15 * time.Second, Suffix: "a", Publishing: true, PendingAfter: 0, KeptBefore: retention.Pending},
		{Elapsed: 25 * time.Second, Suffix: "b", Publishing: true, PendingAfter: 7},
		{Elapsed: 35 * time.Second, Suffix: "c", Publishing: false, PendingAfter: -1},
	}, got)
	require.False(t, got[0].InFlight(), "nothing was pending after it")
	require.True(t, got[1].InFlight())
	require.False(t, got[2].InFlight())
}

func TestValidateNamesTheProblem(t *testing.T) {
	t.Parallel()
	require.NoError(t, Full().Validate())
	require.NoError(t, Small().Validate())
	short := Full()
	short.Retention = time.Minute
	require.ErrorContains(t, short.Validate(), "shorter than the retry window")
	brief := Full()
	brief.Traffic = 3 * time.Minute
	require.ErrorContains(t, brief.Validate(), "to check the levelling off")
	faulty := Full()
	faulty.Fail = 0.6
	require.ErrorContains(t, faulty.Validate(), "at most 0.5")
}
