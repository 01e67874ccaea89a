package endpointauth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/endpointauth"
)

func TestCheckAcceptsEachType(t *testing.T) {
	t.Parallel()
	for _, a := range []endpointauth.Authentication{
		{Type: endpointauth.Bearer, Token: "t0ken"},
		{Type: endpointauth.Basic, Username: "herald", Password: "p w"},
		{Type: endpointauth.OAuth2ClientCredentials, TokenURL: "https://auth.example.com/token", ClientID: "c", ClientSecret: "s"},
		{Type: endpointauth.OAuth2ClientCredentials, TokenURL: "https://auth.example.com/token", ClientID: "c", ClientSecret: "s", Scopes: []string{"a:b", "c"}},
	} {
		require.NoError(t, a.Check(), "%+v", a)
	}
}

func TestCheckNamesTheFieldAtFault(t *testing.T) {
	t.Parallel()
	oauth := func(change func(*endpointauth.Authentication)) endpointauth.Authentication {
		a := endpointauth.Authentication{Type: endpointauth.OAuth2ClientCredentials, TokenURL: "https://auth.example.com/token", ClientID: "c", ClientSecret: "s"}
		change(&a)
		return a
	}
	for _, tt := range []struct {
		a     endpointauth.Authentication
		field string
	}{
		{endpointauth.Authentication{Type: endpointauth.Bearer, Token: strings.Repeat("x", endpointauth.MaxSecretLength+1)}, "authentication.token"},
		{endpointauth.Authentication{Type: endpointauth.Bearer, Token: "é"}, "authentication.token"},
		{endpointauth.Authentication{Type: endpointauth.Basic, Password: "p"}, "authentication.username"},
		{endpointauth.Authentication{Type: endpointauth.Basic, Username: "u", Token: "t"}, "authentication.token"},
		{oauth(func(a *endpointauth.Authentication) { a.TokenURL = "https://user:pw@auth.example.com/token" }), "authentication.token_url"},
		{oauth(func(a *endpointauth.Authentication) { a.TokenURL = "/token" }), "authentication.token_url"},
		{oauth(func(a *endpointauth.Authentication) { a.TokenURL = "https://auth.example.com/token#x" }), "authentication.token_url"},
		{oauth(func(a *endpointauth.Authentication) { a.ClientID = "" }), "authentication.client_id"},
		{oauth(func(a *endpointauth.Authentication) { a.Scopes = make([]string, endpointauth.MaxScopes+1) }), "authentication.scopes"},
		{oauth(func(a *endpointauth.Authentication) { a.Scopes = []string{"ok", `"quoted"`} }), "authentication.scopes[1]"},
	} {
		var fe *endpointauth.FieldError
		require.True(t, errors.As(tt.a.Check(), &fe), "%+v", tt.a)
		require.Equal(t, tt.field, fe.Field, "%+v: %s", tt.a, fe.Problem)
	}
}

// An update of the same type keeps the secrets it leaves out or sends back
// masked; a change of type keeps nothing.
func TestKeepSecretsAndMasked(t *testing.T) {
	t.Parallel()
	stored := endpointauth.Authentication{Type: endpointauth.OAuth2ClientCredentials, TokenURL: "https://a.example/t", ClientID: "c", ClientSecret: "s3cret", Scopes: []string{"x"}}
	update := endpointauth.Authentication{Type: endpointauth.OAuth2ClientCredentials, TokenURL: "https://a.example/t", ClientID: "c", Scopes: []string{"y"}}
	require.Equal(t, "s3cret", update.KeepSecrets(stored).ClientSecret)
	update.ClientSecret = endpointauth.Masked
	require.Equal(t, "s3cret", update.KeepSecrets(stored).ClientSecret)
	update.ClientSecret = "new"
	require.Equal(t, "new", update.KeepSecrets(stored).ClientSecret)
	bearer := endpointauth.Authentication{Type: endpointauth.Bearer}
	require.Empty(t, bearer.KeepSecrets(stored).Token, "another type keeps nothing")
	require.Error(t, bearer.KeepSecrets(stored).Check())

	masked := stored.Masked()
	require.Equal(t, endpointauth.Masked, masked.ClientSecret)
	require.Equal(t, "c", masked.ClientID)
	require.Equal(t, endpointauth.Masked, stored.Public().Masked().ClientSecret, "the stored public part shows its secret as set")
	require.Empty(t, stored.Public().ClientSecret)
}
