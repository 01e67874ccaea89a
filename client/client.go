// Package client calls Herald's management API (/v1) over HTTP: tenants,
// endpoints, publishing, the delivery log, resends, replays and portal
// links. It depends on the standard library and uuid only, so a producer's
// or an operator's program can import it without the server's packages.
// The herald command (cmd/herald) is built on it.
//
//	c, err := client.New(client.Config{URL: "http://127.0.0.1:8080", Key: apiKey})
//	endpoints, err := c.ListEndpoints(ctx, "acme", client.ListOptions{})
//
// Every error the API answers is an *APIError carrying its sentence and the
// field at fault.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one request of a Client whose Config.HTTPClient is
// unset.
const DefaultTimeout = 30 * time.Second

// maxResponseBytes caps what is read of a response: the API's largest
// answers (a page of 200 messages with their payloads) fit well within it.
const maxResponseBytes = 64 << 20

// Config configures a Client.
type Config struct {
	// URL is where the api is reached, e.g. "https://webhooks.example.com"
	// (with or without the trailing "/v1"). Required.
	URL string
	// Key is the bearer token: an API key (hk_…) or a portal session
	// (hps_…). Required.
	Key string
	// HTTPClient sends the requests. Defaults to an http.Client with a
	// DefaultTimeout timeout.
	HTTPClient *http.Client
	// UserAgent is sent on every request. Defaults to "herald-client".
	UserAgent string
}

// Client calls the API. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	key       string
	http      *http.Client
	userAgent string
}

// ErrConfig is wrapped by every error of New.
var ErrConfig = errors.New("client configuration")

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		return nil, fmt.Errorf("%w: the API URL is empty; give the api's address, e.g. http://127.0.0.1:8080", ErrConfig)
	}
	base, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("%w: the API URL %q is not an absolute http or https URL, e.g. http://127.0.0.1:8080", ErrConfig, cfg.URL)
	}
	base.Path = strings.TrimSuffix(base.Path, "/v1")
	if cfg.Key == "" {
		return nil, fmt.Errorf("%w: the API key is empty; give an operator or tenant key (hk_…)", ErrConfig)
	}
	c := &Client{base: base, key: cfg.Key, http: cfg.HTTPClient, userAgent: cfg.UserAgent}
	if c.http == nil {
		c.http = &http.Client{Timeout: DefaultTimeout}
	}
	if c.userAgent == "" {
		c.userAgent = "herald-client"
	}
	return c, nil
}

// do sends body (when not nil) as JSON to the API path (below /v1, its
// segments already escaped) and decodes a 2xx answer into out (when not
// nil). Another answer is an *APIError; a failure to reach the API wraps
// ErrUnreachable.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.send(ctx, method, path, query, nil, body, out)
}

// send is do with headers of the caller's.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, header http.Header, body, out any) error {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: encode the request: %w", method, path, err)
		}
		r = bytes.NewReader(raw)
	}
	u := *c.base
	u.Path += "/v1" + path
	u.RawPath = ""
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &UnreachableError{URL: c.base.String(), Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return &UnreachableError{URL: c.base.String(), Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return problemFrom(resp, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected (%w); is %s Herald's api?", method, path, err, c.base)
	}
	return nil
}

// segment escapes one path segment (an id given by a user).
func segment(s string) string { return url.PathEscape(s) }
