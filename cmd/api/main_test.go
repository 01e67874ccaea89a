package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/cmd/internal/programtest"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
)

// binary is the api built from this package, once per test run.
var binary string

func TestMain(m *testing.M) { programtest.Main(m, "api", &binary) }

// bootstrapKey is the operator key the tests give the api through
// HERALD_BOOTSTRAP_API_KEY.
const bootstrapKey = "hk_test_0123456789abcdefghijklmnopqrstuvwxyz"

// command is the api on a fresh migrated database, configured through the
// environment as a deployment would.
func command(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(),
		"HERALD_DATABASE_URL="+pgtest.NewDatabase(t, pgtest.Herald),
		"HERALD_SECRET_KEY="+secretbox.Generate(),
		"HERALD_MIGRATE=false",
		"HERALD_API_ADDR=127.0.0.1:0",
	)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func TestBadSettingsAreNamed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  []string
		args []string
		want string
	}{
		{env: []string{"HERALD_MIGRATE=maybe"}, want: `HERALD_MIGRATE="maybe" is not true or false`},
		{env: []string{"HERALD_MAX_CONNS=abc"}, want: `HERALD_MAX_CONNS="abc" is not a whole number`},
		{env: []string{"HERALD_MAX_BODY_BYTES=1MiB"}, want: `HERALD_MAX_BODY_BYTES="1MiB" is not a whole number`},
		{env: []string{"HERALD_LOG_FORMAT=xml"}, want: `HERALD_LOG_FORMAT="xml": want text or json`},
		{env: []string{"HERALD_ALLOW_CIDRS=localhost"}, want: `allow-list entry "localhost" is not a CIDR range`},
		{env: []string{"HERALD_SECRET_KEY="}, want: "HERALD_SECRET_KEY is empty"},
		{env: []string{"HERALD_BOOTSTRAP_API_KEY=hk_short"}, want: "--bootstrap-key"},
		{args: []string{"--shutdown-timeout", "soon"}, want: `invalid value "soon" for flag -shutdown-timeout`},
		{env: []string{"HERALD_PUBLIC_URL=webhooks.example.com"}, want: `--public-url: "webhooks.example.com" is not an absolute http or https URL`},
		{env: []string{"HERALD_TRUSTED_PROXY_HEADER=X Forwarded For"}, want: `--trusted-proxy-header: "X Forwarded For" is not an HTTP header name`},
		{env: []string{"HERALD_AUTH_FAILURE_BURST=many"}, want: `HERALD_AUTH_FAILURE_BURST="many" is not a whole number`},
		{env: []string{"HERALD_AUTH_FAILURE_INTERVAL=1"}, want: `HERALD_AUTH_FAILURE_INTERVAL="1" is not a duration`},
		{env: []string{"HERALD_PUBLISH_RATE=fast"}, want: `HERALD_PUBLISH_RATE="fast" is not a number`},
		{env: []string{"HERALD_REPLAY_RATE=0"}, want: "--replay-rate is 0; give replays a second from 1e-06 to 1e+06, or a negative number for no limit"},
		{args: []string{"--test-event-burst", "0"}, want: "--test-event-burst is 0; give from 1 to 1000000"},
		{env: []string{"HERALD_KEY_RATE_SHARE=2"}, want: "--key-rate-share is 2; give a fraction"},
		{env: []string{"HERALD_MAX_ENDPOINTS_PER_TENANT=lots"}, want: `HERALD_MAX_ENDPOINTS_PER_TENANT="lots" is not a whole number`},
		{env: []string{"OTEL_TRACES_EXPORTER=zipkin"}, want: "OTEL_TRACES_EXPORTER=zipkin is not supported; use otlp"},
		{env: []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, want: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported"},
		{env: []string{"OTEL_SDK_DISABLED=maybe"}, want: `OTEL_SDK_DISABLED="maybe" is not a boolean`},
		{env: []string{"HERALD_PORTAL_FRAME_ANCESTORS=https://app.example.com/embed"}, want: `--portal-frame-ancestors: frame ancestor "https://app.example.com/embed" has more than an origin`},
		{env: []string{"HERALD_PORTAL_FRAME_ANCESTORS=*"}, want: `--portal-frame-ancestors: frame ancestor "*" is not an origin`},
		{env: []string{"HERALD_PORTAL_ACCENT_COLOR=blue"}, want: `--portal-accent-color "blue" is not a colour; give it in hex`},
		{env: []string{"HERALD_PORTAL_LOGO_URL=http://example.com/logo.png"}, want: `--portal-logo-url "http://example.com/logo.png" is not an https URL`},
		{env: []string{"HERALD_PORTAL_SUPPORT_URL=javascript:alert(1)"}, want: `--portal-support-url "javascript:alert(1)" is not an https URL`},
		{
			env:  []string{"HERALD_MIGRATE=maybe", "HERALD_MAX_CONNS=abc"},
			want: "HERALD_MIGRATE=\"maybe\" is not true or false\nHERALD_MAX_CONNS=\"abc\" is not a whole number",
		},
	} {
		out, err := command(t, tt.env, tt.args...).CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%v %v: %s", tt.env, tt.args, out)
		require.Equal(t, 1, exit.ExitCode())
		require.Contains(t, string(out), tt.want)
	}
}

// The api takes its settings from the environment, a flag overrides its
// variable, and SIGTERM stops it cleanly.
func TestServesWithSettingsFromTheEnvironment(t *testing.T) {
	t.Parallel()
	cmd := command(t, []string{
		"HERALD_API_ADDR=no-such-host.invalid:1",
		"HERALD_BOOTSTRAP_API_KEY=" + bootstrapKey,
		"HERALD_MAX_BODY_BYTES=64",
		"HERALD_LOG_FORMAT=json",
	}, "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base := "http://" + listeningAddr(t, stderr)

	resp := request(t, "GET", base+"/readyz", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = request(t, "GET", base+"/v1/tenants", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the key from HERALD_BOOTSTRAP_API_KEY was created")
	resp = request(t, "POST", base+"/v1/tenants", `{"id":"acme","name":"`+strings.Repeat("a", 100)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "HERALD_MAX_BODY_BYTES caps bodies")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		require.NoError(t, err, "exit status after SIGTERM")
	case <-time.After(30 * time.Second):
		t.Fatal("the api did not exit within 30s of SIGTERM")
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	t.Parallel()
	help := exec.Command(binary, "--help")
	help.Env = append(os.Environ(), "HERALD_BOOTSTRAP_API_KEY="+bootstrapKey, "HERALD_API_ADDR=127.0.0.1:9999")
	out, err := help.CombinedOutput()
	require.NoError(t, err, "--help exits 0")
	require.NotContains(t, string(out), bootstrapKey, "--help never prints the environment's values")
	require.Contains(t, string(out), `(env HERALD_API_ADDR) (default ":8080")`)
	require.Contains(t, string(out), fmt.Sprintf("(env HERALD_MAX_BODY_BYTES) (default %d)", api.DefaultMaxBodyBytes))
	for _, want := range []string{
		"HERALD_DATABASE_URL", "HERALD_MIGRATE", "HERALD_MAX_CONNS", "HERALD_ALLOW_CIDRS", "HERALD_API_ADDR",
		"HERALD_PUBLIC_URL", "HERALD_BOOTSTRAP_API_KEY", "HERALD_MAX_BODY_BYTES", "HERALD_LOG_FORMAT", "HERALD_SECRET_KEY",
		"HERALD_TRUSTED_PROXY_HEADER", "HERALD_AUTH_FAILURE_BURST", "HERALD_AUTH_FAILURE_INTERVAL",
		"HERALD_MAX_ENDPOINTS_PER_TENANT", "HERALD_KEY_RATE_SHARE",
		"(env HERALD_PUBLISH_RATE) (default 100)", "(env HERALD_PUBLISH_BURST) (default 200)",
		"(env HERALD_RESEND_RATE) (default 10)", "(env HERALD_RESEND_BURST) (default 100)",
		"(env HERALD_REPLAY_RATE) (default 0.1)", "(env HERALD_REPLAY_BURST) (default 10)",
		"(env HERALD_TEST_EVENT_RATE) (default 1)", "(env HERALD_TEST_EVENT_BURST) (default 10)",
		"HERALD_QUEUE_DASHBOARD", "HERALD_PORTAL_FRAME_ANCESTORS", "HERALD_PORTAL_PRODUCT_NAME",
		"HERALD_PORTAL_ACCENT_COLOR", "HERALD_PORTAL_LOGO_URL", "HERALD_PORTAL_SUPPORT_URL",
		"-shutdown-timeout",
	} {
		require.Contains(t, string(out), want)
	}
}

// The limits' flags reach the api: a tenant's endpoint cap and its
// publish limit come from the environment.
func TestLimitsFromTheEnvironment(t *testing.T) {
	t.Parallel()
	cmd := command(t, []string{
		"HERALD_BOOTSTRAP_API_KEY=" + bootstrapKey,
		"HERALD_LOG_FORMAT=json",
		"HERALD_MAX_ENDPOINTS_PER_TENANT=1",
		"HERALD_PUBLISH_RATE=0.01",
		"HERALD_PUBLISH_BURST=2",
		"HERALD_KEY_RATE_SHARE=1",
	})
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + listeningAddr(t, stderr)

	require.Equal(t, http.StatusCreated, request(t, "POST", base+"/v1/tenants", `{"id":"acme"}`).StatusCode)
	endpoint := `{"url":"https://example.com/hooks"}`
	require.Equal(t, http.StatusCreated, request(t, "POST", base+"/v1/tenants/acme/endpoints", endpoint).StatusCode)
	require.Equal(t, http.StatusConflict, request(t, "POST", base+"/v1/tenants/acme/endpoints", endpoint).StatusCode, "a cap of 1")
	publish := `{"event_type":"invoice.paid","object_id":"inv_1","data":{}}`
	for range 2 {
		require.Equal(t, http.StatusAccepted, request(t, "POST", base+"/v1/tenants/acme/messages", publish).StatusCode)
	}
	resp := request(t, "POST", base+"/v1/tenants/acme/messages", publish)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a burst of 2, all of it the key's to use")
	require.Equal(t, "100", resp.Header.Get("Retry-After"))
}

// listeningAddr reads the api's JSON log until it says where it listens,
// then keeps draining it so the api never blocks on a full pipe.
func listeningAddr(t *testing.T, log io.Reader) string {
	t.Helper()
	lines := bufio.NewScanner(log)
	for lines.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(lines.Bytes(), &line) == nil && line.Msg == "api listening" {
			go func() { _, _ = io.Copy(io.Discard, log) }()
			return line.Addr
		}
		t.Logf("api: %s", lines.Text())
	}
	t.Fatalf("the api exited before listening: %v", lines.Err())
	return ""
}

func request(t *testing.T, method, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bootstrapKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp
}
