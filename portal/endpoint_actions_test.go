package portal_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/signing"
)

func TestEndpointLifecycleThroughForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	token := br.csrf()
	ctx := context.Background()

	resp := br.get("/portal/endpoints/new")
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, `<label for="url">`)

	resp = br.post("/portal/endpoints", url.Values{"csrf": {token}, "url": {"http://127.0.0.1:9/hooks"},
		"description": {"billing"}, "other_types": {"invoice.paid, invoice.voided, invoice.paid"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	location := resp.Header.Get("Location")
	require.Regexp(t, `^/portal/endpoints/[0-9a-f-]{36}\?done=created$`, location)
	id := uuid.MustParse(regexp.MustCompile(`[0-9a-f-]{36}`).FindString(location))
	e, err := b.store.GetEndpoint(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "acme", e.TenantID)
	require.Equal(t, []string{"invoice.paid", "invoice.voided"}, e.EventTypes)

	page := br.get(location)
	require.Contains(t, page.body, "Endpoint added.")

	resp = br.post("/portal/endpoints/"+id.String(), url.Values{"csrf": {token}, "url": {"http://127.0.0.1:9/v2"}, "description": {""}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	e, err = b.store.GetEndpoint(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9/v2", e.URL)
	require.Empty(t, e.EventTypes, "no types ticked or typed means every type")

	resp = br.post("/portal/endpoints/"+id.String()+"/disable", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	page = br.get("/portal/endpoints/" + id.String())
	require.Contains(t, page.body, "This endpoint is disabled")
	require.Contains(t, page.body, "disabled by its owner in the portal")

	resp = br.post("/portal/endpoints/"+id.String()+"/enable", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	e, err = b.store.GetEndpoint(ctx, id)
	require.NoError(t, err)
	require.True(t, e.Enabled)

	secret, err := b.store.RevealSecret(ctx, id)
	require.NoError(t, err)
	resp = br.post("/portal/endpoints/"+id.String()+"/secret", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.Contains(t, html.UnescapeString(resp.body), secret.String())
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))

	resp = br.post("/portal/endpoints/"+id.String()+"/secret/rotate", url.Values{"csrf": {token}, "grace": {"1h"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	rotated, err := b.store.RevealSecret(ctx, id)
	require.NoError(t, err)
	require.NotEqual(t, secret.String(), rotated.String())
	require.Contains(t, html.UnescapeString(resp.body), rotated.String())
	require.Contains(t, resp.body, "Secret rotated.")
	_, err = signing.ParseSecret(regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`).FindString(html.UnescapeString(resp.body)))
	require.NoError(t, err)

	resp = br.get("/portal/endpoints/" + id.String() + "/delete")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.body, "Delete this endpoint?")
	resp = br.post("/portal/endpoints/"+id.String()+"/delete", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "/portal/endpoints?done=deleted", resp.Header.Get("Location"))
	require.Equal(t, http.StatusNotFound, br.get("/portal/endpoints/"+id.String()).StatusCode)
	resp = br.get("/portal/endpoints?done=deleted")
	require.Contains(t, resp.body, "being erased in the background")
	require.NotContains(t, resp.body, id.String(), "a deleted endpoint leaves the list at once")
	var queued bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM herald.erasures x JOIN herald.river_job j
    ON j.kind = 'herald.erasure' AND (j.args->>'erasure_id')::uuid = x.id
  WHERE x.endpoint_id = $1 AND x.status = 'running')`, id).Scan(&queued))
	require.True(t, queued, "its erasure is queued")

	_, err = b.store.GetEndpoint(ctx, f.endpoint)
	require.NoError(t, err, "the other endpoint is untouched")
}

func TestEndpointFormShowsWhatTheStoreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	token := br.csrf()
	cases := map[string]struct {
		form url.Values
		want string
	}{
		"no scheme":       {url.Values{"url": {"example.com/hooks"}}, "no scheme"},
		"private address": {url.Values{"url": {"http://10.1.2.3/hooks"}}, "10.1.2.3"},
		"bad event type":  {url.Values{"url": {"https://example.com/"}, "other_types": {"not a type!"}}, "The event types:"},
	}
	for name, tc := range cases {
		tc.form.Set("csrf", token)
		resp := br.post("/portal/endpoints", tc.form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		require.Contains(t, resp.body, `role="alert"`, name)
		require.Contains(t, resp.body, tc.want, name)
		require.Contains(t, resp.body, `aria-invalid="true"`, name)
		require.True(t, strings.Contains(resp.body, `value="`+tc.form.Get("url")+`"`), "%s: the form keeps what was typed", name)
	}
}

func TestAnotherTenantsEndpointCannotBeChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.fixture(t, "tenant-a")
	b.fixture(t, "tenant-b")
	asB := b.signIn(t, "tenant-b")
	token := asB.csrf()
	id := a.endpoint.String()
	for _, path := range []string{
		"/endpoints/" + id, "/endpoints/" + id + "/enable", "/endpoints/" + id + "/disable", "/endpoints/" + id + "/delete",
		"/endpoints/" + id + "/secret", "/endpoints/" + id + "/secret/rotate", "/endpoints/" + id + "/test",
		"/endpoints/" + id + "/replays", "/deliveries/" + a.delivery.String() + "/resend",
	} {
		resp := asB.post("/portal"+path, url.Values{"csrf": {token}, "url": {"http://127.0.0.1/x"}, "grace": {"1h"}, "since": {"1h"}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.NotContains(t, resp.body, "whsec_", path)
	}
	for _, path := range []string{"/" + id + "/edit", "/" + id + "/delete", "/" + id + "/replays/" + uuid.NewString(), "/" + id + "/replays/" + uuid.NewString() + "/progress"} {
		require.Equal(t, http.StatusNotFound, asB.get("/portal/endpoints"+path).StatusCode, path)
	}
	var queued int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM herald.river_job`).Scan(&queued))
	require.Zero(t, queued, "nothing was queued for tenant A")
	e, err := b.store.GetEndpoint(context.Background(), a.endpoint)
	require.NoError(t, err)
	require.True(t, e.Enabled)
	require.Equal(t, "https://tenant-a.example.com/hooks", e.URL)
}

// The endpoint form sets, shows and clears the endpoint's own retry
// policy, and refuses a policy that is not a number or that the store
// refuses, at the form's retry fields.
func TestEndpointRetryPolicyThroughTheForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	token := br.csrf()
	ctx := context.Background()

	resp := br.post("/portal/endpoints", url.Values{"csrf": {token}, "url": {"http://127.0.0.1:9/retries"},
		"retry_window_hours": {"1.5"}, "retry_base_seconds": {"2"}, "retry_cap_seconds": {"60"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	id := uuid.MustParse(regexp.MustCompile(`[0-9a-f-]{36}`).FindString(resp.Header.Get("Location")))
	e, err := b.store.GetEndpoint(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 90*time.Minute, e.RetryPolicy.Window)
	require.Equal(t, 2*time.Second, e.RetryPolicy.Base)
	require.Equal(t, time.Minute, e.RetryPolicy.Cap)

	edit := br.get("/portal/endpoints/" + id.String() + "/edit")
	require.Equal(t, http.StatusOK, edit.StatusCode, edit.body)
	require.Contains(t, edit.body, `name="retry_window_hours" type="number" min="0" step="any" inputmode="decimal" value="1.5"`)
	require.Contains(t, edit.body, `name="retry_cap_seconds" type="number" min="0" step="any" inputmode="decimal" value="60"`)

	for name, tc := range map[string]struct {
		form url.Values
		want string
	}{
		"not a number":   {url.Values{"retry_window_hours": {"soon"}}, `&#34;Retry for&#34; (hours) must be a positive number`},
		"cap below base": {url.Values{"retry_base_seconds": {"30"}, "retry_cap_seconds": {"10"}}, "below base"},
	} {
		tc.form.Set("csrf", token)
		tc.form.Set("url", "http://127.0.0.1:9/retries")
		resp := br.post("/portal/endpoints/"+id.String(), tc.form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		require.Contains(t, resp.body, tc.want, name)
		require.Contains(t, resp.body, `id="retry-error"`, name)
	}

	resp = br.post("/portal/endpoints/"+id.String(), url.Values{"csrf": {token}, "url": {"http://127.0.0.1:9/retries"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	e, err = b.store.GetEndpoint(ctx, id)
	require.NoError(t, err)
	require.Zero(t, e.RetryPolicy, "empty fields go back to the dispatcher's policy")
}
