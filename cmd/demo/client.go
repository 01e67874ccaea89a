package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// client calls Herald's API with an API key.
type client struct {
	base string
	key  string
	http *http.Client
}

// call sends body as JSON and decodes a 2xx response into out (when not
// nil). Any other status is an error carrying the problem's detail; the
// status is returned either way.
func (c *client) call(ctx context.Context, method, path string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var p struct{ Detail string }
		_ = json.Unmarshal(raw, &p)
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, p.Detail)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// waitReady polls /readyz until the API answers 200 or wait has passed.
func (c *client) waitReady(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := c.http.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API at %s was not ready within %s; is the api running? (last error: %v)", c.base, wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *client) secret(ctx context.Context, tenant, endpointID string) (string, error) {
	var s struct{ Secret string }
	_, err := c.call(ctx, http.MethodGet, "/v1/tenants/"+tenant+"/endpoints/"+endpointID+"/secret", nil, &s)
	return s.Secret, err
}

func (c *client) portalLink(ctx context.Context, tenant string) (string, error) {
	var link struct{ URL string }
	_, err := c.call(ctx, http.MethodPost, "/v1/tenants/"+tenant+"/portal-links", nil, &link)
	return link.URL, err
}
