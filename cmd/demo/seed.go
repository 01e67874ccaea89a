package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
)

// demoEventTypes are added to the event-type catalogue.
var demoEventTypes = []struct{ name, description string }{
	{"invoice.created", "An invoice was created; data holds its amount and currency."},
	{"invoice.paid", "An invoice was paid in full."},
}

type seeded struct {
	endpointID string
	secret     string
}

// seed makes sure the demo tenant, its endpoint (enabled, pointing at
// receiverURL) and the event types exist, and returns the endpoint.
func seed(ctx context.Context, c *client, s settings, receiverURL string) (seeded, error) {
	for _, et := range demoEventTypes {
		status, err := c.call(ctx, http.MethodPost, "/v1/event-types", map[string]string{"name": et.name, "description": et.description}, nil)
		if err != nil && status != http.StatusConflict {
			return seeded{}, err
		}
	}
	status, err := c.call(ctx, http.MethodPost, "/v1/tenants", map[string]string{"id": s.tenant, "name": "Demo tenant"}, nil)
	if err != nil && status != http.StatusConflict {
		return seeded{}, err
	}

	var list struct {
		Data []struct {
			ID      string `json:"id"`
			URL     string `json:"url"`
			Enabled bool   `json:"enabled"`
		} `json:"data"`
	}
	if _, err := c.call(ctx, http.MethodGet, "/v1/tenants/"+s.tenant+"/endpoints?limit=200", nil, &list); err != nil {
		return seeded{}, err
	}
	var id string
	for _, e := range list.Data {
		if e.URL != receiverURL {
			continue
		}
		id = e.ID
		if !e.Enabled {
			if _, err := c.call(ctx, http.MethodPost, "/v1/tenants/"+s.tenant+"/endpoints/"+id+"/enable", nil, nil); err != nil {
				return seeded{}, err
			}
		}
	}
	if id != "" {
		// An endpoint sealed under another HERALD_SECRET_KEY (tmp/ was
		// cleared, or another checkout shares this database) cannot be
		// signed for; the demo's own endpoint is made afresh instead.
		if _, err := c.secret(ctx, s.tenant, id); err != nil {
			fmt.Fprintf(os.Stderr, "demo: cannot read the demo endpoint's secret (%v); recreating the endpoint\n", err)
			if _, err := c.call(ctx, http.MethodDelete, "/v1/tenants/"+s.tenant+"/endpoints/"+id, nil, nil); err != nil {
				return seeded{}, err
			}
			id = ""
		}
	}
	if id == "" {
		var created struct {
			ID string `json:"id"`
		}
		_, err := c.call(ctx, http.MethodPost, "/v1/tenants/"+s.tenant+"/endpoints",
			map[string]any{"url": receiverURL, "description": "The demo receiver served by make run"}, &created)
		if err != nil {
			return seeded{}, fmt.Errorf("create the demo endpoint (does the api allow loopback URLs? make run sets HERALD_ALLOW_CIDRS): %w", err)
		}
		id = created.ID
	}
	secret, err := c.secret(ctx, s.tenant, id)
	if err != nil {
		return seeded{}, err
	}
	return seeded{endpointID: id, secret: secret}, nil
}

// publish sends s.events events: each invoice is created, then paid.
func publish(ctx context.Context, c *client, s settings) error {
	for i := range s.events {
		typ := demoEventTypes[i%len(demoEventTypes)].name
		invoice := fmt.Sprintf("inv_%03d", i/len(demoEventTypes)+1)
		body := map[string]any{"event_type": typ, "object_id": invoice,
			"data": map[string]any{"invoice": invoice, "amount": 4200, "currency": "EUR"}}
		if _, err := c.call(ctx, http.MethodPost, "/v1/tenants/"+s.tenant+"/messages", body, nil); err != nil {
			return err
		}
	}
	return nil
}
