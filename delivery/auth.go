package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/heraldhq/herald/endpointauth"
)

// CredentialSource gives an endpoint's authentication and mutual TLS,
// secrets decrypted (*store.Store implements it). An error is Herald's
// fault (a Fault, FaultCredentials): the attempt sends nothing.
type CredentialSource interface {
	Credentials(ctx context.Context, endpointID uuid.UUID) (endpointauth.Credentials, error)
}

// MaxTokenRefreshMargin is how long before its expiry an OAuth2 access
// token is replaced: a minute, or a quarter of the token's lifetime when
// that is shorter, so that a token is never sent in its last moments and
// rejected on arrival.
const MaxTokenRefreshMargin = time.Minute

// redactedAuthorization is what an attempt's stored headers show of the
// Authorization header it sent: its scheme, never the credentials.
var redactedAuthorization = map[endpointauth.Type]string{
	endpointauth.Bearer:                  "Bearer [redacted]",
	endpointauth.Basic:                   "Basic [redacted]",
	endpointauth.OAuth2ClientCredentials: "Bearer [redacted]",
}

// TokenError is an attempt that sent nothing because the endpoint's OAuth2
// token endpoint did not give a token: it is the endpoint's (its token
// endpoint, its client credentials), recorded as its attempt and retried
// on the schedule.
type TokenError struct {
	// TokenURL is the endpoint's token endpoint.
	TokenURL string
	// Err is what the token request met: the token endpoint's answer
	// (*oauth2.RetrieveError) or a network error.
	Err error
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("not sent, no OAuth2 access token: the token request to %s failed: %v", e.TokenURL, e.Err)
}

// Unwrap returns Err.
func (e *TokenError) Unwrap() error { return e.Err }

// endpointClient is how one endpoint is sent to: its client (the worker's
// own, or one whose transport presents the endpoint's certificate and
// trusts its CA bundle) and its Authorization.
type endpointClient struct {
	revision int64
	client   *http.Client
	// transport is the endpoint's own, nil when client is the worker's.
	transport *http.Transport
	auth      *endpointauth.Authentication
	tokens    *tokenCache // nil unless auth is OAuth2ClientCredentials
	used      time.Time
}

// endpointClients keeps an endpointClient per endpoint with credentials,
// built when a delivery's load shows a revision of its credentials newer
// than the one kept (see endpointauth.Credentials.Revision): transports
// and tokens are reused across attempts, and a change of credentials
// replaces them at the next attempt.
type endpointClients struct {
	source CredentialSource
	base   *http.Client // the worker's client: its transport is cloned for mutual TLS
	plain  *endpointClient

	mu      sync.Mutex
	entries map[uuid.UUID]*endpointClient
	added   int
}

func newEndpointClients(source CredentialSource, base *http.Client) *endpointClients {
	return &endpointClients{source: source, base: base, plain: &endpointClient{client: base},
		entries: make(map[uuid.UUID]*endpointClient)}
}

// forAttempt returns how to send to endpointID, whose credentials were at
// revision when its delivery was loaded (0: it has none).
func (c *endpointClients) forAttempt(ctx context.Context, endpointID uuid.UUID, revision int64, now time.Time) (*endpointClient, error) {
	if revision == 0 {
		return c.plain, nil
	}
	if c.source == nil {
		return nil, errors.New("the endpoint has credentials but the worker has no CredentialSource (Config.Credentials)")
	}
	c.mu.Lock()
	e, ok := c.entries[endpointID]
	if ok && e.revision >= revision {
		e.used = now
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	return c.read(ctx, endpointID, now)
}

// read reads endpointID's credentials afresh and returns its client,
// reusing the one kept when the revision is the same. Without a
// CredentialSource every endpoint is sent to without credentials.
func (c *endpointClients) read(ctx context.Context, endpointID uuid.UUID, now time.Time) (*endpointClient, error) {
	if c.source == nil {
		return c.plain, nil
	}
	creds, err := c.source.Credentials(ctx, endpointID)
	if err != nil {
		return nil, err
	}
	if creds.Revision == 0 {
		return c.plain, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[endpointID]; ok && e.revision >= creds.Revision {
		e.used = now
		return e, nil
	}
	e, err := c.build(creds)
	if err != nil {
		return nil, err
	}
	e.used = now
	if old, ok := c.entries[endpointID]; ok && old.transport != nil {
		old.transport.CloseIdleConnections()
	}
	c.entries[endpointID] = e
	if c.added++; c.added >= sweepEvery {
		c.added = 0
		for id, e := range c.entries {
			if now.Sub(e.used) > sweepIdle {
				if e.transport != nil {
					e.transport.CloseIdleConnections()
				}
				delete(c.entries, id)
			}
		}
	}
	return e, nil
}

func (c *endpointClients) build(creds endpointauth.Credentials) (*endpointClient, error) {
	e := &endpointClient{revision: creds.Revision, client: c.base, auth: creds.Authentication}
	if creds.TLS != nil {
		parsed, err := creds.TLS.Reparse()
		if err != nil {
			return nil, err
		}
		base, ok := c.base.Transport.(*http.Transport)
		if !ok {
			return nil, fmt.Errorf("the endpoint has mutual TLS settings, which need Config.Transport to be an *http.Transport (it is a %T)", c.base.Transport)
		}
		e.transport = base.Clone()
		e.transport.TLSClientConfig = parsed.Config()
		client := *c.base
		client.Transport = e.transport
		e.client = &client
	}
	if a := creds.Authentication; a != nil && a.Type == endpointauth.OAuth2ClientCredentials {
		e.tokens = &tokenCache{
			config: clientcredentials.Config{ClientID: a.ClientID, ClientSecret: a.ClientSecret, TokenURL: a.TokenURL, Scopes: a.Scopes},
			client: e.client,
			turn:   make(chan struct{}, 1),
		}
	}
	return e, nil
}

// authorize sets h's Authorization and returns the OAuth2 token it used
// (nil for the static types). stale is a token the receiver refused: a
// fresh one is fetched unless another attempt already replaced it.
func (e *endpointClient) authorize(ctx context.Context, h http.Header, stale *oauth2.Token) (*oauth2.Token, error) {
	switch {
	case e.auth == nil:
		return nil, nil
	case e.auth.Type == endpointauth.Bearer:
		h.Set("Authorization", "Bearer "+e.auth.Token)
		return nil, nil
	case e.auth.Type == endpointauth.Basic:
		r := http.Request{Header: h}
		r.SetBasicAuth(e.auth.Username, e.auth.Password)
		return nil, nil
	}
	token, err := e.tokens.get(ctx, stale)
	if err != nil {
		return nil, &TokenError{TokenURL: e.auth.TokenURL, Err: err}
	}
	h.Set("Authorization", "Bearer "+token.AccessToken)
	return token, nil
}

// refreshesOn401 reports whether a 401 answer is worth one more try with
// a fresh token.
func (e *endpointClient) refreshesOn401() bool { return e.tokens != nil }

// tokenCache holds one endpoint's OAuth2 access token. Concurrent attempts
// wait for one token request rather than each making its own, each no
// longer than its own context allows.
type tokenCache struct {
	config clientcredentials.Config
	client *http.Client

	// turn is held (a token put in) by the attempt that reads or fetches
	// the token; it guards token and fetchedAt.
	turn      chan struct{}
	token     *oauth2.Token
	fetchedAt time.Time
}

// get returns a token that is not about to expire (see
// MaxTokenRefreshMargin), fetching one when there is none, it is about to
// expire, or it is stale (the receiver refused it). Token lifetimes are
// on the real clock, as the token endpoint's expires_in is.
func (t *tokenCache) get(ctx context.Context, stale *oauth2.Token) (*oauth2.Token, error) {
	select {
	case t.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another attempt's token request: %w", ctx.Err())
	}
	defer func() { <-t.turn }()
	if t.token != nil && t.token != stale && t.fresh(time.Now()) {
		return t.token, nil
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, t.client)
	fetchedAt := time.Now()
	token, err := t.config.Token(ctx)
	if err != nil {
		return nil, describeTokenError(err)
	}
	if token.AccessToken == "" {
		return nil, errors.New("the answer carried no access_token")
	}
	t.token, t.fetchedAt = token, fetchedAt
	return token, nil
}

// fresh reports whether the kept token may still be sent at now: before
// its expiry less the margin (MaxTokenRefreshMargin, or a quarter of its
// lifetime). A token without expiry is kept until a receiver refuses it.
func (t *tokenCache) fresh(now time.Time) bool {
	if t.token.Expiry.IsZero() {
		return true
	}
	margin := min(MaxTokenRefreshMargin, t.token.Expiry.Sub(t.fetchedAt)/4)
	return now.Before(t.token.Expiry.Add(-margin))
}

// describeTokenError words a token endpoint's refusal by its status and
// OAuth2 error code, without its body's other text.
func describeTokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		text := fmt.Sprintf("the token endpoint answered HTTP %d %s", re.Response.StatusCode, http.StatusText(re.Response.StatusCode))
		if re.ErrorCode != "" {
			text += " (" + re.ErrorCode
			if re.ErrorDescription != "" {
				text += ": " + re.ErrorDescription
			}
			text += ")"
		}
		return errors.New(text)
	}
	return unwrapURLError(err)
}
