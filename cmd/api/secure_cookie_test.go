package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Behind a TLS-terminating proxy the portal's cookies are Secure when
// --public-url is an https URL, however its scheme is written.
func TestPortalCookiesAreSecureForAnHTTPSPublicURLInAnyCase(t *testing.T) {
	t.Parallel()
	cmd := command(t, []string{
		"HERALD_BOOTSTRAP_API_KEY=" + bootstrapKey,
		"HERALD_PUBLIC_URL=HTTPS://Herald.example",
		"HERALD_LOG_FORMAT=json",
	})
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	base := "http://" + listeningAddr(t, stderr)

	require.Equal(t, http.StatusCreated, request(t, "POST", base+"/v1/tenants", `{"id":"acme"}`).StatusCode)
	req, err := http.NewRequest("POST", base+"/v1/tenants/acme/portal-links", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bootstrapKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var link struct{ URL string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&link))
	require.NoError(t, resp.Body.Close())
	u, err := url.Parse(link.URL)
	require.NoError(t, err)

	// The proxy hands the api plain HTTP.
	page, err := http.Get(base + u.RequestURI())
	require.NoError(t, err)
	body, err := io.ReadAll(page.Body)
	require.NoError(t, err)
	require.NoError(t, page.Body.Close())
	require.Equal(t, http.StatusOK, page.StatusCode, "%s", body)
	nonce := cookieNamed(t, page.Cookies(), "herald_portal_login")
	require.True(t, nonce.Secure, "the sign-in form's cookie is Secure")

	form := url.Values{}
	for _, name := range []string{"token", "csrf"} {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]+)"`).FindSubmatch(body)
		require.NotNil(t, m, "no %s field", name)
		form.Set(name, string(m[1]))
	}
	post, err := http.NewRequest("POST", base+"/portal/login", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.AddCookie(&http.Cookie{Name: nonce.Name, Value: nonce.Value})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signedIn, err := client.Do(post)
	require.NoError(t, err)
	require.NoError(t, signedIn.Body.Close())
	require.Equal(t, http.StatusSeeOther, signedIn.StatusCode)
	require.True(t, cookieNamed(t, signedIn.Cookies(), "herald_portal").Secure, "the session cookie is Secure")
}

func cookieNamed(t *testing.T, cookies []*http.Cookie, name string) *http.Cookie {
	t.Helper()
	for _, c := range cookies {
		if c.Name == name {
			return c
		}
	}
	require.Failf(t, "no cookie", "the response sets no %s cookie", name)
	return nil
}
