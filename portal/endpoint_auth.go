package portal

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/endpointauth"
	"github.com/heraldhq/herald/store"
)

// credentialsForm is the authentication and mutual TLS part of the
// endpoint form. Secrets are write-only: the edit form never shows them,
// and a secret left empty keeps the current one of the same type.
type credentialsForm struct {
	// AuthType is "" for none, or an endpointauth.Type.
	AuthType    string
	Username    string
	TokenURL    string
	ClientID    string
	Scopes      string
	token       string
	password    string
	secret      string
	certificate string
	key         string
	caBundle    string
	// RemoveTLS asks to remove the client certificate and CA bundle.
	RemoveTLS bool
	// Current describes what the endpoint has now, on the edit form.
	Current store.CredentialsSummary
}

func readCredentialsForm(r *http.Request) credentialsForm {
	return credentialsForm{
		AuthType:    r.PostFormValue("auth_type"),
		Username:    strings.TrimSpace(r.PostFormValue("auth_username")),
		TokenURL:    strings.TrimSpace(r.PostFormValue("auth_token_url")),
		ClientID:    strings.TrimSpace(r.PostFormValue("auth_client_id")),
		Scopes:      r.PostFormValue("auth_scopes"),
		token:       r.PostFormValue("auth_token"),
		password:    r.PostFormValue("auth_password"),
		secret:      r.PostFormValue("auth_client_secret"),
		certificate: strings.TrimSpace(r.PostFormValue("tls_client_certificate")),
		key:         strings.TrimSpace(r.PostFormValue("tls_client_key")),
		caBundle:    strings.TrimSpace(r.PostFormValue("tls_ca_bundle")),
		RemoveTLS:   r.PostFormValue("tls_remove") != "",
	}
}

// change is what the form asks of the endpoint's credentials. On the
// create form (editing false) an empty section changes nothing; on the
// edit form the authentication is always the form's (type "none" removes
// it), and the TLS settings change only when something was pasted or
// removal was ticked.
func (f credentialsForm) change(editing bool) store.CredentialsChange {
	var c store.CredentialsChange
	var auth *endpointauth.Authentication
	if f.AuthType != "" {
		a := endpointauth.Authentication{Type: endpointauth.Type(f.AuthType)}
		switch a.Type {
		case endpointauth.Bearer:
			a.Token = f.token
		case endpointauth.Basic:
			a.Username, a.Password = f.Username, f.password
		case endpointauth.OAuth2ClientCredentials:
			a.TokenURL, a.ClientID, a.ClientSecret = f.TokenURL, f.ClientID, f.secret
			a.Scopes = strings.Fields(f.Scopes)
		}
		auth = &a
	}
	if editing || auth != nil {
		c.Authentication = &auth
	}
	var t *endpointauth.TLS
	switch {
	case f.certificate != "" || f.key != "" || f.caBundle != "":
		t = &endpointauth.TLS{ClientCertificate: f.certificate, ClientKey: f.key, CABundle: f.caBundle}
		c.TLS = &t
	case f.RemoveTLS:
		c.TLS = &t
	}
	return c
}

// credentialsFormFor fills the edit form with what the endpoint has, no
// secret included.
func credentialsFormFor(summary store.CredentialsSummary) credentialsForm {
	f := credentialsForm{Current: summary}
	if a := summary.Authentication; a != nil {
		f.AuthType, f.Username, f.TokenURL, f.ClientID, f.Scopes = string(a.Type), a.Username, a.TokenURL, a.ClientID, strings.Join(a.Scopes, " ")
	}
	return f
}

// credentialsOf returns what may be shown of an endpoint's credentials.
func (p *Portal) credentialsOf(ctx context.Context, id uuid.UUID) (store.CredentialsSummary, error) {
	summaries, err := p.store.DescribeCredentials(ctx, id)
	if err != nil {
		return store.CredentialsSummary{}, err
	}
	return summaries[id], nil
}

// credentialFieldLabels name the credentials' fields in the form's errors.
var credentialFieldLabels = map[string]string{
	"authentication.type":          "The authentication type",
	"authentication.token":         "The bearer token",
	"authentication.username":      "The username",
	"authentication.password":      "The password",
	"authentication.token_url":     "The token URL",
	"authentication.client_id":     "The client ID",
	"authentication.client_secret": "The client secret",
	"authentication.scopes":        "The scopes",
	"tls":                          "Mutual TLS",
	"tls.client_certificate":       "The client certificate",
	"tls.client_key":               "The private key",
	"tls.ca_bundle":                "The CA bundle",
}
