package bench

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/database"
)

// generator is a scenario's load generator and, for LoadHTTP, the api
// process it publishes through.
type generator struct {
	load *load
	api  *process
}

// startGenerator starts the api (for LoadHTTP) and the load generator of
// scenario s on the database at url.
func (r *runner) startGenerator(ctx context.Context, s Scenario, url, secretKey string, tenants []string, rec *recorder) (*generator, error) {
	spec := LoadSpec{
		Mode: s.Load, Tenants: tenants, Events: s.events(), PerRequest: s.perRequest(),
		Clients: s.clients(), Rate: s.Rate, DatabaseURL: url,
	}
	g := &generator{}
	if s.Load == LoadHTTP {
		key, err := benchKey(ctx, url, tenants)
		if err != nil {
			return nil, err
		}
		g.api, spec.APIURL, err = startAPI(ctx, r.cfg.APIPath, r.cfg.APIArgs, url, secretKey)
		if err != nil {
			return nil, err
		}
		spec.APIKey = key
	}
	var err error
	if g.load, err = r.cfg.Load.start(spec, rec); err != nil {
		_, _ = g.stop(ctx)
		return nil, err
	}
	return g, nil
}

// benchKey makes the API key the load generator publishes with: the
// tenant's own when there is one tenant, as a producer would hold,
// otherwise an operator key.
func benchKey(ctx context.Context, url string, tenants []string) (string, error) {
	pool, err := database.Open(ctx, url, database.Options{MaxConns: 1})
	if err != nil {
		return "", err
	}
	defer pool.Close()
	tenant := ""
	if len(tenants) == 1 {
		tenant = tenants[0]
	}
	_, key, err := auth.CreateAPIKey(ctx, pool, tenant, "bench")
	return key, err
}

// wait waits for the generator's last request; a failed request fails the
// run, since its event is missing.
func (g *generator) wait(ctx context.Context) error {
	failed, err := g.load.wait(ctx)
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d load requests failed; the first: %s", failed, g.load.firstFailure())
	}
	return nil
}

// stop ends the load generator and the api and returns the api's CPU
// seconds. A nil generator (no Load) stops nothing.
func (g *generator) stop(ctx context.Context) (apiCPUSeconds float64, err error) {
	if g == nil {
		return 0, nil
	}
	if g.load != nil {
		g.load.stop()
	}
	if g.api == nil {
		return 0, nil
	}
	u, err := g.api.Stop(ctx)
	if err != nil {
		return 0, fmt.Errorf("stop api: %w", err)
	}
	return u.CPU.Seconds(), nil
}
