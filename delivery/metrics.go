package delivery

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LatencyBuckets are herald_attempt_duration_seconds' upper bounds in
// seconds, up to the delivery timeout's ceiling.
var LatencyBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30}

// attemptMetrics count the attempts this process recorded, as they commit:
// each dispatcher replica reports its own, and Prometheus sums them. A
// scrape reads memory, never the database.
type attemptMetrics struct {
	attempts *prometheus.CounterVec
	duration prometheus.Histogram
	// breakersOpen counts the endpoints this process holds to one probe
	// at a time (see inflight).
	breakersOpen prometheus.Gauge
}

// newAttemptMetrics returns herald_attempts_total{outcome}, with every
// outcome at 0, herald_attempt_duration_seconds and
// herald_endpoint_breakers_open, registered with r when r is not nil.
func newAttemptMetrics(r prometheus.Registerer) (*attemptMetrics, error) {
	m := &attemptMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_attempts_total",
			Help: "Delivery attempts this process recorded, by outcome (succeeded, retry, exhausted, endpoint_gone).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_attempt_duration_seconds",
			Help:    "How long the delivery attempts this process recorded took, from request start to response or error.",
			Buckets: LatencyBuckets,
		}),
		breakersOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "herald_endpoint_breakers_open",
			Help: "Endpoints whose breaker this process knows open (health.BreakerThreshold attempts in a row unanswered): it sends each one probe at a time.",
		}),
	}
	for _, v := range []Verdict{Succeeded, Retry, Exhausted, EndpointGone} {
		m.attempts.WithLabelValues(string(v))
	}
	if r == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.attempts, m.duration, m.breakersOpen} {
		if err := r.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe counts one recorded attempt.
func (m *attemptMetrics) observe(outcome Verdict, took time.Duration) {
	m.attempts.WithLabelValues(string(outcome)).Inc()
	m.duration.Observe(took.Seconds())
}
