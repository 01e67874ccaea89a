package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PortalLoginPath is where a portal link points. Links are built as
// <public URL>/portal/login?token=hpl_…. A GET there only shows what the
// link opens (LookUpPortalLink); the person confirms with a POST to the same
// path, which redeems the token with RedeemPortalLink and sets the session
// cookie, so link scanners that fetch the link neither use it up nor open a
// session.
const PortalLoginPath = "/portal/login"

// DefaultLinkTTL is how long a portal link can be redeemed.
const DefaultLinkTTL = 15 * time.Minute

// MaxLinkTTL is the longest lifetime a portal link may be given.
const MaxLinkTTL = 24 * time.Hour

// DefaultSessionTTL is how long a portal session lasts.
const DefaultSessionTTL = 12 * time.Hour

// Errors from RedeemPortalLink, each with a sentence the portal can show.
var (
	ErrLinkUnknown = errors.New("this portal link is not valid; ask for a new one")
	ErrLinkUsed    = errors.New("this portal link has already been used; ask for a new one")
	ErrLinkExpired = errors.New("this portal link has expired; ask for a new one")
)

// PortalLink is a minted link's token and expiry. The token is shown once.
type PortalLink struct {
	Token     string
	TenantID  string
	ExpiresAt time.Time
}

// MintPortalLink creates a single-use link token for tenantID that can be
// redeemed until ttl has passed. Zero ttl means DefaultLinkTTL; a ttl above
// MaxLinkTTL is an error. No key is recorded as its maker: use it for links
// a program mints, and MintPortalLinkBy for links a caller asks for.
func MintPortalLink(ctx context.Context, db DB, tenantID string, ttl time.Duration) (PortalLink, error) {
	return MintPortalLinkBy(ctx, db, Principal{}, tenantID, ttl)
}

// MintPortalLinkBy is MintPortalLink on behalf of creator. When creator is
// an API key, the link and the session opened with it are recorded as made
// by it: revoking the key (RevokeAPIKey) deletes both.
func MintPortalLinkBy(ctx context.Context, db DB, creator Principal, tenantID string, ttl time.Duration) (PortalLink, error) {
	if ttl == 0 {
		ttl = DefaultLinkTTL
	}
	if ttl < 0 || ttl > MaxLinkTTL {
		return PortalLink{}, fmt.Errorf("portal link lifetime must be between 1s and %s, got %s", MaxLinkTTL, ttl)
	}
	// Spent and expired links and sessions are of no use; clearing them here
	// keeps both tables small without a separate cleaner.
	if _, err := db.Exec(ctx, pruneExpiredPortal); err != nil {
		return PortalLink{}, fmt.Errorf("prune expired portal links: %w", err)
	}
	token := newToken(portalLinkPrefix)
	var expires time.Time
	err := db.QueryRow(ctx, insertPortalLink, hash(token), tenantID, ttl.Seconds(), creator.keyID()).Scan(&expires)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation
		return PortalLink{}, ErrTenantNotFound
	}
	if err != nil {
		return PortalLink{}, fmt.Errorf("mint portal link for %s: %w", tenantID, err)
	}
	return PortalLink{Token: token, TenantID: tenantID, ExpiresAt: expires}, nil
}

// Session is an open portal session. Token goes into the browser's cookie;
// only its hash is stored.
type Session struct {
	Token     string
	ID        uuid.UUID
	TenantID  string
	ExpiresAt time.Time
}

// RedeemPortalLink spends a link token (it works once) and opens a portal
// session for its tenant lasting ttl (zero means DefaultSessionTTL), made by
// the key that minted the link. It
// returns ErrLinkUnknown, ErrLinkUsed or ErrLinkExpired when the link cannot
// be used.
func RedeemPortalLink(ctx context.Context, db DB, linkToken string, ttl time.Duration) (Session, error) {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	var s Session
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var createdBy *uuid.UUID
		err := tx.QueryRow(ctx, spendPortalLink, hash(linkToken)).Scan(&s.TenantID, &createdBy)
		if errors.Is(err, pgx.ErrNoRows) {
			return whyLinkUnusable(ctx, tx, linkToken)
		}
		if err != nil {
			return fmt.Errorf("redeem portal link: %w", err)
		}
		s.Token = newToken(portalSessionPrefix)
		s.ID = sessionID(s.Token)
		if err := tx.QueryRow(ctx, insertPortalSession, hash(s.Token), s.TenantID, ttl.Seconds(), createdBy).Scan(&s.ExpiresAt); err != nil {
			return fmt.Errorf("open portal session for %s: %w", s.TenantID, err)
		}
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	return s, nil
}

func whyLinkUnusable(ctx context.Context, db DB, linkToken string) error {
	_, err := LookUpPortalLink(ctx, db, linkToken)
	if err == nil {
		// The spend found no usable row, so another redemption got there
		// first: now() is fixed within the transaction, so it cannot
		// have expired in between.
		return ErrLinkUsed
	}
	return err
}

// LookUpPortalLink returns the tenant and expiry of a link that can still
// be redeemed, without spending it; the returned PortalLink has no Token.
// It returns ErrLinkUnknown, ErrLinkUsed or ErrLinkExpired, in that order
// of precedence, when the link cannot be used.
func LookUpPortalLink(ctx context.Context, db DB, linkToken string) (PortalLink, error) {
	var link PortalLink
	var used, expired bool
	err := db.QueryRow(ctx, selectPortalLink, hash(linkToken)).Scan(&link.TenantID, &link.ExpiresAt, &used, &expired)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return PortalLink{}, ErrLinkUnknown
	case err != nil:
		return PortalLink{}, fmt.Errorf("look up portal link: %w", err)
	case used:
		return PortalLink{}, ErrLinkUsed
	case expired:
		return PortalLink{}, ErrLinkExpired
	}
	return link, nil
}

// PortalSession resolves a session token to a principal scoped to the
// session's tenant, or returns ErrUnauthenticated when it is unknown or
// expired.
func PortalSession(ctx context.Context, db DB, token string) (Principal, error) {
	var tenantID string
	err := db.QueryRow(ctx, selectPortalSession, hash(token)).Scan(&tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up portal session: %w", err)
	}
	return Principal{Kind: KindPortalSession, ID: sessionID(token), TenantID: tenantID}, nil
}

// EndPortalSession deletes a session (sign out). Ending an unknown session
// is not an error.
func EndPortalSession(ctx context.Context, db DB, token string) error {
	if _, err := db.Exec(ctx, deletePortalSession, hash(token)); err != nil {
		return fmt.Errorf("end portal session: %w", err)
	}
	return nil
}

// sessionID is a stable identifier for logs that reveals nothing about the
// token: the first 16 bytes of its hash.
func sessionID(token string) uuid.UUID {
	var id uuid.UUID
	copy(id[:], hash(token))
	return id
}
