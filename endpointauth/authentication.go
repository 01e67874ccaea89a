// Package endpointauth holds what an endpoint authenticates with besides
// its signature: an Authorization header (a static bearer token or basic
// credentials, or an OAuth2 access token Herald obtains with the client
// credentials grant), and mutual TLS (a client certificate and key, and a
// CA bundle trusted for that endpoint only). It validates them, so that
// bad input is refused when the endpoint is created or changed, and says
// how the API shows them: secrets never, only that they are set.
//
// Storing them (encrypted) is package store's; using them to send is
// package delivery's.
package endpointauth

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// Type names a kind of Authorization header.
type Type string

// The types.
const (
	// Bearer sends "Authorization: Bearer <token>".
	Bearer Type = "bearer"
	// Basic sends "Authorization: Basic base64(<username>:<password>)".
	Basic Type = "basic"
	// OAuth2ClientCredentials sends "Authorization: Bearer <access token>",
	// the token obtained from TokenURL with the client credentials grant
	// (RFC 6749 §4.4) and cached until shortly before it expires.
	OAuth2ClientCredentials Type = "oauth2_client_credentials"
)

// Types lists every Type, in the order errors name them.
var Types = []Type{Bearer, Basic, OAuth2ClientCredentials}

// Limits on the fields, far above what real credentials need; they keep a
// row and a header small.
const (
	// MaxSecretLength bounds a token, a password and a client secret.
	MaxSecretLength = 4096
	// MaxNameLength bounds a username and a client id.
	MaxNameLength = 256
	// MaxTokenURLLength bounds TokenURL.
	MaxTokenURLLength = 2048
	// MaxScopes bounds the number of scopes, MaxScopeLength each one.
	MaxScopes      = 32
	MaxScopeLength = 256
)

// Masked is what the API shows in place of a secret that is set.
const Masked = "********"

// Authentication is an endpoint's Authorization header: which Type, and
// the fields that type uses. The others must be empty.
type Authentication struct {
	Type Type `json:"type"`
	// Token is Bearer's token, sent as it is.
	Token string `json:"token,omitempty"`
	// Username and Password are Basic's. The username may not contain
	// a colon (RFC 7617).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// TokenURL, ClientID, ClientSecret and Scopes are
	// OAuth2ClientCredentials': TokenURL is an https URL (the client
	// secret travels to it), Scopes are optional.
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// FieldError is input Check or ParseTLS refuses: Field names it as the
// API spells it ("authentication.token_url"), Problem says what is wrong
// and how to fix it.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

func refuse(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Check returns nil when a can be used, or a *FieldError naming the first
// field at fault.
func (a Authentication) Check() error {
	var present []string
	for name, v := range map[string]string{"token": a.Token, "username": a.Username, "password": a.Password,
		"token_url": a.TokenURL, "client_id": a.ClientID, "client_secret": a.ClientSecret} {
		if v != "" {
			present = append(present, name)
		}
	}
	if len(a.Scopes) > 0 {
		present = append(present, "scopes")
	}
	switch a.Type {
	case Bearer:
		if err := only(present, "token"); err != nil {
			return err
		}
		return secret("authentication.token", a.Token, "the token the receiver expects after \"Bearer \"")
	case Basic:
		if err := only(present, "username", "password"); err != nil {
			return err
		}
		if err := name("authentication.username", a.Username); err != nil {
			return err
		}
		if strings.Contains(a.Username, ":") {
			return refuse("authentication.username", "contains a colon, which basic authentication cannot carry in a username (RFC 7617)")
		}
		return secret("authentication.password", a.Password, "the password")
	case OAuth2ClientCredentials:
		if err := only(present, "token_url", "client_id", "client_secret", "scopes"); err != nil {
			return err
		}
		if err := checkTokenURL(a.TokenURL); err != nil {
			return err
		}
		if err := name("authentication.client_id", a.ClientID); err != nil {
			return err
		}
		if err := secret("authentication.client_secret", a.ClientSecret, "the client secret the token endpoint issued"); err != nil {
			return err
		}
		return checkScopes(a.Scopes)
	case "":
		return refuse("authentication.type", "is missing; give one of %s", typeList())
	}
	return refuse("authentication.type", "is %q; give one of %s", a.Type, typeList())
}

func typeList() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = fmt.Sprintf("%q", t)
	}
	return strings.Join(names, ", ")
}

// only refuses the fields present that the type does not use.
func only(present []string, allowed ...string) error {
	for _, p := range present {
		if !contains(allowed, p) {
			return refuse("authentication."+p, "is not used by this type, which takes %s; remove it", strings.Join(allowed, ", "))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func secret(field, value, what string) error {
	switch {
	case value == "":
		return refuse(field, "is missing; give %s", what)
	case value == Masked:
		return refuse(field, "is the mask Herald shows in place of a secret; give the secret itself (on an update, omit it to keep the current one)")
	case len(value) > MaxSecretLength:
		return refuse(field, "is %d bytes; at most %d are accepted", len(value), MaxSecretLength)
	case !printable(value):
		return refuse(field, "contains a control character or a character outside ASCII, which an HTTP header cannot carry")
	}
	return nil
}

func name(field, value string) error {
	switch {
	case value == "":
		return refuse(field, "is missing")
	case len(value) > MaxNameLength:
		return refuse(field, "is %d bytes; at most %d are accepted", len(value), MaxNameLength)
	case !printable(value):
		return refuse(field, "contains a control character or a character outside ASCII")
	}
	return nil
}

// printable reports whether s is visible ASCII or spaces: what a header
// value carries safely.
func printable(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || (r < ' ' && r != '\t') || r == 0x7f {
			return false
		}
	}
	return true
}

func checkTokenURL(raw string) error {
	const field = "authentication.token_url"
	if raw == "" {
		return refuse(field, "is missing; give the https URL of the OAuth2 token endpoint")
	}
	if len(raw) > MaxTokenURLLength {
		return refuse(field, "is %d characters; at most %d are accepted", len(raw), MaxTokenURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !u.IsAbs() {
		return refuse(field, "is not an absolute URL; give the https URL of the OAuth2 token endpoint, like https://auth.example.com/oauth2/token")
	}
	if u.Scheme != "https" {
		return refuse(field, "uses %q; the client secret is sent to it, so it must be https", u.Scheme)
	}
	if u.User != nil {
		return refuse(field, "carries credentials; give them as client_id and client_secret instead")
	}
	if u.Fragment != "" {
		return refuse(field, "has a fragment (#%s); remove it", u.Fragment)
	}
	return nil
}

func checkScopes(scopes []string) error {
	if len(scopes) > MaxScopes {
		return refuse("authentication.scopes", "has %d scopes; at most %d are accepted", len(scopes), MaxScopes)
	}
	for i, s := range scopes {
		field := fmt.Sprintf("authentication.scopes[%d]", i)
		if s == "" || len(s) > MaxScopeLength {
			return refuse(field, "must be 1 to %d characters", MaxScopeLength)
		}
		// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
		for _, r := range s {
			if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
				return refuse(field, "is %q; a scope is visible ASCII without spaces, quotes or backslashes (RFC 6749 §3.3)", s)
			}
		}
	}
	return nil
}

// Masked returns a as the API shows it: the secret its type requires
// replaced by Masked, whether a holds it or not (a stored public part
// does not).
func (a Authentication) Masked() Authentication {
	a.Scopes = append([]string(nil), a.Scopes...)
	switch a.Type {
	case Bearer:
		a.Token = Masked
	case Basic:
		a.Password = Masked
	case OAuth2ClientCredentials:
		a.ClientSecret = Masked
	}
	return a
}

// Public returns a without its secrets: what may be stored in the clear.
func (a Authentication) Public() Authentication {
	out := a
	out.Token, out.Password, out.ClientSecret = "", "", ""
	return out
}

// KeepSecrets returns a with the secrets it leaves empty (or gives as
// Masked) taken from previous, when both are of the same type: an update
// that changes, say, the scopes need not repeat the client secret, and a
// form that shows Masked can send it back unchanged.
func (a Authentication) KeepSecrets(previous Authentication) Authentication {
	if a.Type != previous.Type {
		return a
	}
	keep := func(s *string, old string) {
		if *s == "" || *s == Masked {
			*s = old
		}
	}
	keep(&a.Token, previous.Token)
	keep(&a.Password, previous.Password)
	keep(&a.ClientSecret, previous.ClientSecret)
	return a
}

// Credentials is everything an endpoint authenticates with, secrets
// included: what the dispatcher sends with.
type Credentials struct {
	// Revision grows with every change of the endpoint's credentials; 0
	// means they were never set. The dispatcher keeps what it built from
	// them (a transport, a token) while the revision is unchanged.
	Revision int64
	// Authentication is nil when no Authorization header is sent.
	Authentication *Authentication
	// TLS is nil without mutual TLS or a CA bundle.
	TLS *TLS
}
