package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// KindOperatorSession is a browser signed in to an operator's page (the
// api's queue dashboard) with an operator API key.
const KindOperatorSession Kind = "operator_session"

// DefaultOperatorSessionTTL is how long an operator session lasts: a
// working day, after which the operator types the key again.
const DefaultOperatorSessionTTL = 8 * time.Hour

// OperatorSession is an open operator session. Token goes into the
// browser's cookie; only its hash is stored.
type OperatorSession struct {
	Token     string
	ExpiresAt time.Time
}

// OpenOperatorSession opens a session for operator, an operator API key's
// principal (Authenticate), lasting ttl (zero means
// DefaultOperatorSessionTTL). The session ends when it expires, when it is
// ended (EndOperatorSession), or when the key is revoked. Any other
// principal is refused with ErrUnauthenticated.
func OpenOperatorSession(ctx context.Context, db DB, operator Principal, ttl time.Duration) (OperatorSession, error) {
	if operator.Kind != KindAPIKey || !operator.Operator() {
		return OperatorSession{}, ErrUnauthenticated
	}
	if ttl <= 0 {
		ttl = DefaultOperatorSessionTTL
	}
	// Sign-ins are rare and throttled; clearing expired sessions here keeps
	// the table small without a separate cleaner.
	if _, err := db.Exec(ctx, pruneExpiredOperatorSessions); err != nil {
		return OperatorSession{}, fmt.Errorf("prune expired operator sessions: %w", err)
	}
	s := OperatorSession{Token: newToken(operatorSessionPrefix)}
	if err := db.QueryRow(ctx, insertOperatorSession, hash(s.Token), operator.ID, ttl.Seconds()).Scan(&s.ExpiresAt); err != nil {
		return OperatorSession{}, fmt.Errorf("open operator session: %w", err)
	}
	return s, nil
}

// AuthenticateOperatorSession resolves a session token to an operator
// principal, or returns ErrUnauthenticated when the session is unknown,
// ended or expired, or its key is revoked.
func AuthenticateOperatorSession(ctx context.Context, db DB, token string) (Principal, error) {
	err := db.QueryRow(ctx, selectOperatorSession, hash(token)).Scan(new(int))
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up operator session: %w", err)
	}
	return Principal{Kind: KindOperatorSession, ID: sessionID(token)}, nil
}

// EndOperatorSession deletes a session (sign out). Ending an unknown
// session is not an error.
func EndOperatorSession(ctx context.Context, db DB, token string) error {
	if _, err := db.Exec(ctx, deleteOperatorSession, hash(token)); err != nil {
		return fmt.Errorf("end operator session: %w", err)
	}
	return nil
}
