package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/store"
)

// Noisy is a tenant that hurts the others (issue 18): many endpoints that
// hang until the dispatcher's timeout, and a flood of publishes to them,
// beside the scenario's well-behaved tenants. Only the well-behaved
// endpoints are measured, against a control run of the same scenario
// without the noisy tenant.
type Noisy struct {
	// Endpoints is how many endpoints hang until the timeout.
	Endpoints int
	// Rate is how many events per second are published to them while the
	// well-behaved tenants publish; each goes to every hanging endpoint.
	Rate float64
	// Shared puts the hanging endpoints in the first well-behaved tenant,
	// beside its healthy endpoints, instead of in a tenant of their own:
	// the breaker, not the tenant's cap, must then keep them from holding
	// its workers.
	Shared bool
}

// noiseType is the type of the noisy tenant's events; only the hanging
// endpoints subscribe to it, and the healthy ones only to eventType.
const noiseType = "noise.flood"

// noisyControl names the control run of a scenario with a noisy tenant.
func noisyControl(name string) string { return name + "-control" }

// noisyTenant returns the tenant the hanging endpoints belong to.
func noisyTenant(s Scenario, tenants []string) string {
	if s.Noisy.Shared {
		return tenants[0]
	}
	return s.Name + "-noisy"
}

// createNoisy creates the noisy endpoints of s (and their tenant, unless
// they share one of tenants), one per URL.
func createNoisy(ctx context.Context, st *store.Store, s Scenario, tenants, urls []string) (string, error) {
	tenant := noisyTenant(s, tenants)
	if !s.Noisy.Shared {
		if _, err := st.CreateTenant(ctx, store.NewTenant{ID: tenant, Name: "bench noisy tenant"}); err != nil {
			return "", err
		}
	}
	for _, url := range urls {
		if _, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: url, EventTypes: []string{noiseType}}); err != nil {
			return "", err
		}
	}
	return tenant, nil
}

// publishNoise publishes rate events a second to tenant, one per
// transaction, for d or until ctx ends. Their deliveries are not measured,
// so their commits are not recorded.
func publishNoise(ctx context.Context, pool *pgxpool.Pool, tenant string, rate float64, d time.Duration) error {
	start := time.Now()
	total := int(math.Round(rate * d.Seconds()))
	for i := range total {
		slot := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if wait := time.Until(slot); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		msg := outbox.Message{Tenant: tenant, Type: noiseType, ObjectID: fmt.Sprintf("noise_%d", i), Data: map[string]any{"i": i}}
		if _, err := outbox.PublishPool(ctx, pool, msg); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("publish noise: %w", err)
		}
	}
	return nil
}

// noisyTargets checks the targets of the scenarios with a noisy tenant:
// the well-behaved endpoints' p99 within targetNoisyRatio of the control
// run's, or under targetNoisyFloor, whichever is larger, and none of their
// deliveries later than targetNoisyMax.
func noisyTargets(r Report) []Target {
	var out []Target
	for _, s := range Scenarios {
		if s.Noisy == nil {
			continue
		}
		noisy, ok1 := r.result(s.Name)
		control, ok2 := r.result(noisyControl(s.Name))
		if !ok1 || !ok2 {
			continue
		}
		bound := max(targetNoisyRatio*control.Latency.P99, targetNoisyFloor)
		out = append(out, Target{
			Name: s.Name + ": well-behaved p99 and max",
			Want: fmt.Sprintf("p99 ≤ %.0f ms (%.0f× %.1f ms, or %.0f ms), max ≤ %.0f ms", bound, targetNoisyRatio, control.Latency.P99, targetNoisyFloor, targetNoisyMax),
			Got:  fmt.Sprintf("p99 %.1f ms, max %.0f ms", noisy.Latency.P99, noisy.Latency.Max),
			Met: noisy.Latency.Count > 0 && noisy.Latency.P99 <= bound && noisy.Latency.Max <= targetNoisyMax &&
				noisy.Problem == "" && control.Problem == "",
		})
	}
	return out
}
