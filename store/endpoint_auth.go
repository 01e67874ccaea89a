package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/endpointauth"
)

// CredentialsChange lists the changes SetCredentials makes to an
// endpoint's authentication and mutual TLS. A nil field is left as it is.
type CredentialsChange struct {
	// Authentication replaces the Authorization header; a pointer to nil
	// removes it. Secrets it leaves empty are kept from the current one of
	// the same type (endpointauth.Authentication.KeepSecrets).
	Authentication **endpointauth.Authentication
	// TLS replaces the client certificate, key and CA bundle as a whole;
	// a pointer to nil removes them.
	TLS **endpointauth.TLS
}

// CredentialsSummary is what may be shown of an endpoint's credentials:
// no secret.
type CredentialsSummary struct {
	// Authentication has its secrets replaced by endpointauth.Masked; nil
	// when none is set.
	Authentication *endpointauth.Authentication
	// TLS is nil without mutual TLS or a CA bundle.
	TLS *TLSSummary
}

// TLSSummary describes an endpoint's mutual TLS.
type TLSSummary struct {
	// ClientCertificate is true when a certificate and key are set;
	// Subject and NotAfter then describe the certificate.
	ClientCertificate bool
	Subject           string
	NotAfter          *time.Time
	// CABundle is the PEM bundle trusted for the endpoint, "" for none.
	CABundle string
}

// credentialsAAD binds sealed credentials to their endpoint and part.
func credentialsAAD(endpointID uuid.UUID, part string) []byte {
	return append([]byte("herald endpoint "+part+"\x00"), endpointID[:]...)
}

// sealedTLS is what tls_sealed holds: the client certificate and key.
type sealedTLS struct {
	ClientCertificate string `json:"client_certificate"`
	ClientKey         string `json:"client_key"`
}

// SetCredentials changes an endpoint's authentication or mutual TLS, or
// both, checked as endpointauth checks them: bad input is a
// *ValidationError whose Field is as the API spells it
// ("authentication.token_url", "tls.client_key"). An endpoint that does
// not exist is an error wrapping ErrNotFound.
func (s *Store) SetCredentials(ctx context.Context, endpointID uuid.UUID, change CredentialsChange) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return s.SetCredentialsTx(ctx, tx, endpointID, change) })
}

// SetCredentialsTx is SetCredentials in the caller's transaction.
func (s *Store) SetCredentialsTx(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, change CredentialsChange) error {
	fail := func(err error) error {
		return fmt.Errorf("set credentials of endpoint %s: %w", endpointID, err)
	}
	if change.Authentication == nil && change.TLS == nil {
		return nil
	}
	var authSealed, tlsSealed []byte
	var caBundle *string
	err := tx.QueryRow(ctx, lockCredentials, endpointID).Scan(&authSealed, &tlsSealed, &caBundle)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	current, err := s.openCredentials(endpointID, 0, authSealed, tlsSealed, caBundle)
	if err != nil {
		return fail(err)
	}

	auth, tlsConfig := current.Authentication, current.TLS
	if change.Authentication != nil {
		auth = *change.Authentication
		if auth != nil {
			next := *auth
			if current.Authentication != nil {
				next = next.KeepSecrets(*current.Authentication)
			}
			if err := next.Check(); err != nil {
				return fail(fieldError(err))
			}
			// The token URL is an outgoing request too: the URL policy
			// (the SSRF guard's CheckURL) refuses one that can never be
			// reached, as it does an endpoint's URL.
			if next.Type == endpointauth.OAuth2ClientCredentials && s.urlPolicy != nil {
				if err := s.urlPolicy(next.TokenURL); err != nil {
					return fail(&ValidationError{Field: "authentication.token_url", Problem: err.Error(), Err: err})
				}
			}
			if len(next.Scopes) == 0 {
				next.Scopes = nil // as it reads back
			}
			auth = &next
		}
	}
	var parsed endpointauth.Parsed
	if change.TLS != nil && *change.TLS != nil {
		tlsConfig = *change.TLS
		if parsed, err = tlsConfig.Parse(s.now()); err != nil {
			return fail(fieldError(err))
		}
	} else if change.TLS != nil {
		tlsConfig = nil
	}
	// A change to what is already set writes nothing: the revision, and
	// with it the dispatchers' transports and tokens, stay.
	if reflect.DeepEqual(auth, current.Authentication) && reflect.DeepEqual(tlsConfig, current.TLS) {
		return nil
	}
	if tlsConfig != nil && change.TLS == nil {
		if parsed, err = tlsConfig.Reparse(); err != nil {
			return fail(err)
		}
	}

	var (
		authType              *string
		authPublic            []byte
		subject               *string
		notAfter              *time.Time
		newAuthSealed, newTLS []byte
		newCABundle           *string
	)
	if auth != nil {
		t := string(auth.Type)
		authType = &t
		if authPublic, err = json.Marshal(auth.Public()); err != nil {
			return fail(err)
		}
		whole, err := json.Marshal(auth)
		if err != nil {
			return fail(err)
		}
		newAuthSealed = s.box.Seal(whole, credentialsAAD(endpointID, "authentication"))
	}
	if tlsConfig != nil {
		if tlsConfig.ClientCertificate != "" {
			whole, err := json.Marshal(sealedTLS{ClientCertificate: tlsConfig.ClientCertificate, ClientKey: tlsConfig.ClientKey})
			if err != nil {
				return fail(err)
			}
			newTLS = s.box.Seal(whole, credentialsAAD(endpointID, "tls"))
			subject, notAfter = &parsed.Subject, &parsed.NotAfter
		}
		if tlsConfig.CABundle != "" {
			newCABundle = &tlsConfig.CABundle
		}
	}
	if _, err := tx.Exec(ctx, upsertCredentials, endpointID, authType, authPublic, newAuthSealed, newTLS, subject, notAfter, newCABundle); err != nil {
		return fail(err)
	}
	return nil
}

// fieldError makes an endpointauth refusal a *ValidationError.
func fieldError(err error) error {
	var fe *endpointauth.FieldError
	if errors.As(err, &fe) {
		return &ValidationError{Field: fe.Field, Problem: fe.Problem}
	}
	return err
}

// Credentials returns an endpoint's credentials, secrets decrypted, for
// sending. An endpoint that never had any has the zero Credentials (with
// Revision 0); one that does not exist is an error wrapping ErrNotFound.
// Its errors never contain a secret.
func (s *Store) Credentials(ctx context.Context, endpointID uuid.UUID) (endpointauth.Credentials, error) {
	var (
		revision            int64
		authSealed, tlsSeal []byte
		caBundle            *string
	)
	err := s.pool.QueryRow(ctx, selectCredentials, endpointID).Scan(&revision, &authSealed, &tlsSeal, &caBundle)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.GetEndpoint(ctx, endpointID); err != nil {
			return endpointauth.Credentials{}, err
		}
		return endpointauth.Credentials{}, nil
	}
	if err != nil {
		return endpointauth.Credentials{}, fmt.Errorf("credentials of endpoint %s: %w", endpointID, err)
	}
	return s.openCredentials(endpointID, revision, authSealed, tlsSeal, caBundle)
}

func (s *Store) openCredentials(endpointID uuid.UUID, revision int64, authSealed, tlsSealed []byte, caBundle *string) (endpointauth.Credentials, error) {
	c := endpointauth.Credentials{Revision: revision}
	if authSealed != nil {
		plain, err := s.box.Open(authSealed, credentialsAAD(endpointID, "authentication"))
		if err != nil {
			return c, fmt.Errorf("decrypt authentication of endpoint %s: %w", endpointID, err)
		}
		var a endpointauth.Authentication
		if err := json.Unmarshal(plain, &a); err != nil {
			return c, fmt.Errorf("stored authentication of endpoint %s does not decode", endpointID)
		}
		c.Authentication = &a
	}
	if tlsSealed != nil || caBundle != nil {
		c.TLS = &endpointauth.TLS{}
		if caBundle != nil {
			c.TLS.CABundle = *caBundle
		}
	}
	if tlsSealed != nil {
		plain, err := s.box.Open(tlsSealed, credentialsAAD(endpointID, "tls"))
		if err != nil {
			return c, fmt.Errorf("decrypt client certificate of endpoint %s: %w", endpointID, err)
		}
		var t sealedTLS
		if err := json.Unmarshal(plain, &t); err != nil {
			return c, fmt.Errorf("stored client certificate of endpoint %s does not decode", endpointID)
		}
		c.TLS.ClientCertificate, c.TLS.ClientKey = t.ClientCertificate, t.ClientKey
	}
	return c, nil
}

// DescribeCredentials returns what may be shown of the credentials of the
// endpoints ids, by id; an endpoint without any is absent. It decrypts
// nothing.
func (s *Store) DescribeCredentials(ctx context.Context, ids ...uuid.UUID) (map[uuid.UUID]CredentialsSummary, error) {
	out := make(map[uuid.UUID]CredentialsSummary)
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, describeCredentials, ids)
	if err != nil {
		return nil, fmt.Errorf("describe credentials: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id         uuid.UUID
			authPublic []byte
			hasCert    bool
			subject    *string
			notAfter   *time.Time
			caBundle   *string
			summary    CredentialsSummary
		)
		if err := rows.Scan(&id, &authPublic, &hasCert, &subject, &notAfter, &caBundle); err != nil {
			return nil, fmt.Errorf("describe credentials: %w", err)
		}
		if authPublic != nil {
			var a endpointauth.Authentication
			if err := json.Unmarshal(authPublic, &a); err != nil {
				return nil, fmt.Errorf("describe credentials of endpoint %s: %w", id, err)
			}
			masked := a.Masked()
			summary.Authentication = &masked
		}
		if hasCert || caBundle != nil {
			t := &TLSSummary{ClientCertificate: hasCert, NotAfter: notAfter}
			if subject != nil {
				t.Subject = *subject
			}
			if caBundle != nil {
				t.CABundle = *caBundle
			}
			summary.TLS = t
		}
		out[id] = summary
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("describe credentials: %w", err)
	}
	return out, nil
}
