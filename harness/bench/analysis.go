package bench

import (
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Latency summarises commit-to-arrival latencies, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Point is one second of a run: what arrived in it and how late.
type Point struct {
	// Second counts from the start of delivery (the dispatcher's start, or
	// the first publish when the dispatcher runs from the beginning).
	Second    int     `json:"second"`
	Delivered int     `json:"delivered"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
}

// window says which part of a run counts.
type window struct {
	// start is when delivering could begin.
	start time.Duration
	// warmup is skipped at the start when computing the sustained rate and
	// (for events committed during it) the latency.
	warmup time.Duration
	// expected is how many deliveries to measured endpoints the run makes.
	expected int
}

// analysis is what a run's arrivals say about its measured deliveries.
type analysis struct {
	delivered  int
	duplicates int
	// attempts is requests per delivery that reached its endpoint.
	attempts  float64
	sustained float64
	drain     time.Duration
	latency   Latency
	series    []Point
	// unlinked counts accepted arrivals whose message no producer
	// committed: a bug in the bench or in Herald.
	unlinked int
}

// analyse joins arrivals to commits. A delivery's latency is measured to
// the first arrival its endpoint accepted; later accepted copies are
// duplicates (Herald delivers at least once, so they may happen, but they
// should be rare).
func analyse(commits map[uuid.UUID]time.Duration, arrivals []arrival, w window) analysis {
	var a analysis
	first := make(map[deliveryKey]time.Duration)
	seen := make(map[deliveryKey]bool)
	requests := 0
	for _, ar := range arrivals {
		if !ar.measured {
			continue
		}
		d := deliveryKey{message: ar.message, endpoint: ar.endpoint}
		requests++
		seen[d] = true
		if !ar.ok() {
			continue
		}
		if _, ok := first[d]; ok {
			a.duplicates++
			continue
		}
		first[d] = ar.at
	}
	a.delivered = len(first)
	if len(seen) > 0 {
		a.attempts = float64(requests) / float64(len(seen))
	}

	type sample struct{ at, latency time.Duration }
	samples := make([]sample, 0, len(first))
	arrivalTimes := make([]time.Duration, 0, len(first))
	for d, at := range first {
		arrivalTimes = append(arrivalTimes, at)
		committed, ok := commits[d.message]
		if !ok {
			a.unlinked++
			continue
		}
		if inWarmup := committed >= w.start && committed < w.start+w.warmup; inWarmup {
			continue
		}
		samples = append(samples, sample{at: at, latency: at - committed})
	}
	slices.Sort(arrivalTimes)
	if n := len(arrivalTimes); n > 0 {
		a.drain = arrivalTimes[n-1] - w.start
		a.sustained = sustainedRate(arrivalTimes, w)
	}

	latencies := make([]time.Duration, len(samples))
	for i, s := range samples {
		latencies[i] = s.latency
	}
	a.latency = summarise(latencies)

	bySecond := make(map[int][]time.Duration)
	for _, s := range samples {
		sec := int(max(s.at-w.start, 0) / time.Second)
		bySecond[sec] = append(bySecond[sec], s.latency)
	}
	delivered := make(map[int]int)
	for _, at := range arrivalTimes {
		delivered[int(max(at-w.start, 0)/time.Second)]++
	}
	if n := len(arrivalTimes); n > 0 {
		last := int(max(arrivalTimes[n-1]-w.start, 0) / time.Second)
		for sec := 0; sec <= last; sec++ {
			l := summarise(bySecond[sec])
			a.series = append(a.series, Point{Second: sec, Delivered: delivered[sec], P50: l.P50, P99: l.P99, Max: l.Max})
		}
	}
	return a
}

// transactionLatency summarises how long the transactions took, leaving
// out those committed in the warm-up.
func transactionLatency(txs []transaction, w window) Latency {
	took := make([]time.Duration, 0, len(txs))
	for _, tx := range txs {
		if inWarmup := tx.at >= w.start && tx.at < w.start+w.warmup; !inWarmup {
			took = append(took, tx.took)
		}
	}
	return summarise(took)
}

// sustainedRate is deliveries per second between the end of the warm-up and
// the arrival of 99% of the expected deliveries (or the last arrival, if
// fewer came): the rate the pipeline holds, without its start-up and without
// the stragglers of the tail.
func sustainedRate(sorted []time.Duration, w window) float64 {
	from := w.start + w.warmup
	endIndex := len(sorted) - 1
	if w.expected > 0 {
		endIndex = min(endIndex, int(math.Ceil(float64(w.expected)*0.99))-1)
	}
	end := sorted[max(endIndex, 0)]
	if end <= from {
		// Everything arrived during the warm-up: use the whole run.
		from = w.start
	}
	span := end - from
	if span <= 0 {
		return 0
	}
	begin, _ := slices.BinarySearch(sorted, from)
	return float64(endIndex+1-begin) / span.Seconds()
}

// summarise returns the percentiles of latencies (nearest rank).
func summarise(latencies []time.Duration) Latency {
	if len(latencies) == 0 {
		return Latency{}
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(sorted)))) - 1
		return ms(sorted[min(max(i, 0), len(sorted)-1)])
	}
	return Latency{Count: len(sorted), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: ms(sorted[len(sorted)-1])}
}

func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*100) / 100
}
