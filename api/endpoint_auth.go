package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/endpointauth"
	"github.com/heraldhq/herald/store"
)

// TLSView is what the API shows of an endpoint's mutual TLS: the client
// certificate's subject and expiry, never the certificate's key.
type TLSView struct {
	// ClientCertificateSubject and ClientCertificateExpiresAt describe
	// the client certificate; absent without one.
	ClientCertificateSubject   string     `json:"client_certificate_subject,omitempty"`
	ClientCertificateExpiresAt *time.Time `json:"client_certificate_expires_at,omitempty"`
	// ClientKey is endpointauth.Masked when a key is set.
	ClientKey string `json:"client_key,omitempty"`
	// CABundle is the PEM trusted for this endpoint, absent for none.
	CABundle string `json:"ca_bundle,omitempty"`
}

// credentialsRequest is the authentication and tls of a create or update.
// On an update, an absent field is left as it is and null removes it.
type credentialsRequest struct {
	Authentication json.RawMessage `json:"authentication"`
	TLS            json.RawMessage `json:"tls"`
}

// change reads r into a store change, or a 422 naming the field.
func (r credentialsRequest) change() (store.CredentialsChange, error) {
	var c store.CredentialsChange
	if r.Authentication != nil {
		var a *endpointauth.Authentication
		if err := strictDecode(r.Authentication, &a); err != nil {
			return c, invalid("authentication", "authentication "+err.Error()+"; give an object such as {\"type\":\"bearer\",\"token\":\"…\"}, or null to remove it")
		}
		c.Authentication = &a
	}
	if r.TLS != nil {
		var t *endpointauth.TLS
		if err := strictDecode(r.TLS, &t); err != nil {
			return c, invalid("tls", "tls "+err.Error()+"; give an object with client_certificate and client_key (PEM) and/or ca_bundle, or null to remove it")
		}
		c.TLS = &t
	}
	return c, nil
}

func strictDecode(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

// withCredentials fills the authentication and tls of views from the
// store: masked, and only for the endpoints that have any.
func (s *Server) withCredentials(ctx context.Context, views ...*Endpoint) error {
	ids := make([]uuid.UUID, len(views))
	for i, v := range views {
		ids[i] = v.ID
	}
	summaries, err := s.store.DescribeCredentials(ctx, ids...)
	if err != nil {
		return err
	}
	for _, v := range views {
		summary, ok := summaries[v.ID]
		if !ok {
			continue
		}
		v.Authentication = summary.Authentication
		if t := summary.TLS; t != nil {
			v.TLS = &TLSView{ClientCertificateSubject: t.Subject, ClientCertificateExpiresAt: t.NotAfter, CABundle: t.CABundle}
			if t.ClientCertificate {
				v.TLS.ClientKey = endpointauth.Masked
			}
		}
	}
	return nil
}

// writeEndpoint answers with e as the API shows it, credentials masked.
func (s *Server) writeEndpoint(w http.ResponseWriter, r *http.Request, status int, e store.Endpoint) error {
	view := endpointView(e)
	if err := s.withCredentials(r.Context(), &view); err != nil {
		return err
	}
	return writeJSON(w, status, view)
}
