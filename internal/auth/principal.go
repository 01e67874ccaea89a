// Package auth decides who is calling Herald's API: operator or tenant API
// keys (bearer tokens stored as SHA-256 hashes) and customer-portal sessions
// opened with single-use links. A Principal says which tenants a caller may
// see; handlers ask it before touching a tenant's objects.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what auth needs from a pool or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Kind says how a principal authenticated.
type Kind string

const (
	// KindAPIKey is a caller holding an API key.
	KindAPIKey Kind = "api_key"
	// KindPortalSession is a browser session opened with a portal link.
	KindPortalSession Kind = "portal_session"
)

// Principal is an authenticated caller.
type Principal struct {
	Kind Kind
	// ID is the API key's id, or the portal session's, for logs.
	ID uuid.UUID
	// TenantID is the one tenant the caller may act on; empty for an
	// operator key, which may act on every tenant.
	TenantID string
}

// Operator reports whether the principal may act on every tenant.
func (p Principal) Operator() bool { return p.TenantID == "" }

// keyID is the principal's API key id, recorded as the maker of the
// credentials it creates; nil for a portal session or no principal.
func (p Principal) keyID() *uuid.UUID {
	if p.Kind != KindAPIKey {
		return nil
	}
	return &p.ID
}

// CanAccess reports whether the principal may see tenantID's objects.
func (p Principal) CanAccess(tenantID string) bool {
	return p.Operator() || p.TenantID == tenantID
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal stored by WithPrincipal.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// ErrUnauthenticated means a token is unknown, revoked or expired.
var ErrUnauthenticated = errors.New("the token is unknown, revoked or expired")

// Token prefixes say what a token is, so a leaked one is recognisable and
// Authenticate knows where to look it up.
const (
	apiKeyPrefix        = "hk_"
	portalLinkPrefix    = "hpl_"
	portalSessionPrefix = "hps_"
	// operatorSessionPrefix marks an operator session's token, which only
	// the queue dashboard takes, from its cookie.
	operatorSessionPrefix = "hos_"
)

// newToken returns prefix followed by 32 random bytes in URL-safe base64.
func newToken(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// hash is how every token is stored: high-entropy random tokens need no
// slow hash, and SHA-256 keeps lookups to one index probe.
func hash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
