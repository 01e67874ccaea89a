package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/page"
)

// APIKey describes a key without the key itself.
type APIKey struct {
	ID uuid.UUID `json:"id"`
	// TenantID is the tenant the key is scoped to; empty for an operator key.
	TenantID  string     `json:"tenant_id,omitempty"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// ErrTenantNotFound means a key or link was asked for a tenant that does not exist.
var ErrTenantNotFound = errors.New("tenant not found")

// ErrKeyNotFound means no key has the given id.
var ErrKeyNotFound = errors.New("api key not found")

// ErrMalformedKey means a bootstrap key does not look like a Herald key.
var ErrMalformedKey = errors.New(`an API key must start with "hk_" and have at least 32 more characters`)

// CreateAPIKey makes a new key, scoped to tenantID or, when it is empty,
// operator-wide. It returns the key's description and the key itself, which
// is shown once and never stored. No key is recorded as its maker: use it
// for keys a program makes, and CreateAPIKeyBy for keys a caller asks for.
func CreateAPIKey(ctx context.Context, db DB, tenantID, name string) (APIKey, string, error) {
	return CreateAPIKeyBy(ctx, db, Principal{}, tenantID, name)
}

// CreateAPIKeyBy is CreateAPIKey on behalf of creator. When creator is an
// API key, the new key is recorded as made by it, and revoking the creator
// (RevokeAPIKey) revokes the new key too.
func CreateAPIKeyBy(ctx context.Context, db DB, creator Principal, tenantID, name string) (APIKey, string, error) {
	key := newToken(apiKeyPrefix)
	k, err := insertKey(ctx, db, creator.keyID(), tenantID, name, key)
	return k, key, err
}

// EnsureAPIKey stores key as an operator key unless it is already stored.
// Deployments use it to bootstrap their first key from configuration.
func EnsureAPIKey(ctx context.Context, db DB, key, name string) error {
	if !strings.HasPrefix(key, apiKeyPrefix) || len(key) < len(apiKeyPrefix)+32 {
		return ErrMalformedKey
	}
	var exists bool
	if err := db.QueryRow(ctx, selectKeyExists, hash(key)).Scan(&exists); err != nil {
		return fmt.Errorf("look up bootstrap key: %w", err)
	}
	if exists {
		return nil
	}
	_, err := insertKey(ctx, db, nil, "", name, key)
	return err
}

func insertKey(ctx context.Context, db DB, createdBy *uuid.UUID, tenantID, name, key string) (APIKey, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return APIKey{}, err
	}
	var tenant *string
	if tenantID != "" {
		tenant = &tenantID
	}
	rows, err := db.Query(ctx, insertAPIKey, id, tenant, name, key[:len(apiKeyPrefix)+6], hash(key), createdBy)
	if err != nil {
		return APIKey{}, fmt.Errorf("create api key: %w", err)
	}
	k, err := pgx.CollectExactlyOneRow(rows, scanKey)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation
		return APIKey{}, ErrTenantNotFound
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("create api key: %w", err)
	}
	return k, nil
}

// ListAPIKeys returns a page of tenantID's keys, newest first; an empty
// tenantID lists the operator keys.
func ListAPIKeys(ctx context.Context, db DB, tenantID string, req page.Request) (page.Page[APIKey], error) {
	var afterID *uuid.UUID
	if req.After != nil {
		id, err := uuid.Parse(req.After.ID)
		if err != nil {
			return page.Page[APIKey]{}, page.ErrInvalidCursor
		}
		afterID = &id
	}
	rows, err := db.Query(ctx, listAPIKeys, tenantID, req.AfterTime(), afterID, req.Size()+1)
	if err != nil {
		return page.Page[APIKey]{}, fmt.Errorf("list api keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return page.Page[APIKey]{}, fmt.Errorf("list api keys: %w", err)
	}
	return page.Trim(req, keys, func(k APIKey) page.Cursor {
		return page.Cursor{CreatedAt: k.CreatedAt, ID: k.ID.String()}
	}), nil
}

// RevokeAPIKey makes one of tenantID's keys (an operator key when tenantID
// is empty) unusable from now on, with everything it made: the keys it
// created (CreateAPIKeyBy) and the keys those created, the portal links they
// minted (MintPortalLinkBy), the portal sessions opened with those links and
// the operator sessions signed in with any of them (OpenOperatorSession).
// It all happens in one transaction (a savepoint when db is one), so a
// revocation never leaves part of what the key made usable. Revoking twice
// is fine; a key of another scope is ErrKeyNotFound.
func RevokeAPIKey(ctx context.Context, db DB, tenantID string, id uuid.UUID) (APIKey, error) {
	var k APIKey
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, revokeAPIKey, tenantID, id)
		if err != nil {
			return err
		}
		if k, err = pgx.CollectExactlyOneRow(rows, scanKey); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, revokeCreatedBy, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return APIKey{}, ErrKeyNotFound
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("revoke api key %s: %w", id, err)
	}
	return k, nil
}

// Authenticate resolves a bearer token (an API key or a portal session) to
// its principal, or returns ErrUnauthenticated.
func Authenticate(ctx context.Context, db DB, token string) (Principal, error) {
	switch {
	case strings.HasPrefix(token, apiKeyPrefix):
		var p Principal
		var tenant *string
		err := db.QueryRow(ctx, selectActiveKey, hash(token)).Scan(&p.ID, &tenant)
		if errors.Is(err, pgx.ErrNoRows) {
			return Principal{}, ErrUnauthenticated
		}
		if err != nil {
			return Principal{}, fmt.Errorf("authenticate api key: %w", err)
		}
		p.Kind = KindAPIKey
		if tenant != nil {
			p.TenantID = *tenant
		}
		return p, nil
	case strings.HasPrefix(token, portalSessionPrefix):
		return PortalSession(ctx, db, token)
	}
	return Principal{}, ErrUnauthenticated
}

func scanKey(row pgx.CollectableRow) (APIKey, error) {
	var k APIKey
	var tenant *string
	err := row.Scan(&k.ID, &tenant, &k.Name, &k.Prefix, &k.CreatedAt, &k.RevokedAt)
	if tenant != nil {
		k.TenantID = *tenant
	}
	return k, err
}
