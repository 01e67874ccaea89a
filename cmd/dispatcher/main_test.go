package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/internal/programtest"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

// binary is the dispatcher built from this package, once per test run.
var binary string

func TestMain(m *testing.M) { programtest.Main(m, "dispatcher", &binary) }

const tenant = "acme"

type testBundle struct {
	url   string
	key   string
	pool  *pgxpool.Pool
	store *store.Store
}

func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	ctx := context.Background()
	b := &testBundle{url: pgtest.NewDatabase(t, pgtest.Herald), key: secretbox.Generate()}
	var err error
	b.pool, err = database.Open(ctx, b.url, database.Options{MaxConns: 3})
	require.NoError(t, err)
	t.Cleanup(b.pool.Close)
	box, err := secretbox.Parse(b.key)
	require.NoError(t, err)
	b.store, err = store.New(b.pool, store.Config{Box: box})
	require.NoError(t, err)
	_, err = b.store.CreateTenant(ctx, store.NewTenant{ID: tenant})
	require.NoError(t, err)
	return b, ctx
}

func (b *testBundle) endpoint(t *testing.T, ctx context.Context, url string) (uuid.UUID, signing.Secret) {
	t.Helper()
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: url})
	require.NoError(t, err)
	secret, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)
	return e.ID, secret
}

func (b *testBundle) publish(t *testing.T, ctx context.Context) uuid.UUID {
	t.Helper()
	p, err := outbox.PublishPool(ctx, b.pool, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{"amount": 4200}})
	require.NoError(t, err)
	return p.ID
}

func (b *testBundle) status(t *testing.T, ctx context.Context, message uuid.UUID) string {
	t.Helper()
	var status string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT coalesce(max(status), '') FROM herald.deliveries WHERE message_id = $1", message).Scan(&status))
	return status
}

// process is a running dispatcher.
type process struct {
	cmd    *exec.Cmd
	output *syncBuffer
	done   chan struct{}
	err    error
}

// start runs the dispatcher binary on the test database. Its output is
// logged if the test fails; it is killed when the test ends.
func (b *testBundle) start(t *testing.T, env ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary), output: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(),
		"HERALD_DATABASE_URL="+b.url,
		"HERALD_SECRET_KEY="+b.key,
		"HERALD_ALLOW_CIDRS=127.0.0.0/8",
		"HERALD_MIGRATE=false",
		"HERALD_POLL_INTERVAL=100ms",
		"HERALD_DELIVERY_TIMEOUT=1s",
		"HERALD_RESCUE_STUCK_AFTER=3s",
		// Endpoint timeouts up to 1 s keep the job timeout (2 s) below it.
		"HERALD_ENDPOINT_MAX_TIMEOUT=1s",
		"HERALD_MAX_CONNS=5",
	)
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("dispatcher %d output:\n%s", p.cmd.Process.Pid, p.output.String())
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit error.
func (p *process) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		t.Fatalf("the dispatcher did not exit within %s", within)
		return nil
	}
}

// A dispatcher killed while the receiver holds its request loses nothing:
// River rescues the job in the next dispatcher, which sends it again.
func TestKilledDispatcherDeliveryStillArrives(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	held := make(chan struct{})
	r := webhooktest.NewReceiver(t, func(n int, w http.ResponseWriter, req *http.Request) {
		if n == 1 {
			close(held)
			<-req.Context().Done() // never answers; the sender dies
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	_, secret := b.endpoint(t, ctx, r.URL)
	first := b.start(t)
	message := b.publish(t, ctx)

	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first dispatcher never sent the delivery")
	}
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	var exit *exec.ExitError
	require.ErrorAs(t, first.wait(t, 10*time.Second), &exit)
	require.Equal(t, "pending", b.status(t, ctx, message), "the killed attempt recorded nothing")

	b.start(t)
	require.Eventually(t, func() bool { return b.status(t, ctx, message) == "succeeded" }, 60*time.Second, 100*time.Millisecond)
	reqs := r.Requests()
	require.Len(t, reqs, 2)
	for _, req := range reqs {
		require.Equal(t, "msg_"+message.String(), req.Header.Get(signing.HeaderID), "both sends carry the message's webhook-id")
		require.NoError(t, signing.Verifier{Secrets: []signing.Secret{secret}}.Verify(req.Header, req.Body))
	}
	var attempts int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.attempts").Scan(&attempts))
	require.Equal(t, 1, attempts, "only the attempt that finished is recorded")
}

// SIGTERM lets the attempt in flight finish, records it, and exits 0.
func TestSIGTERMFinishesAttemptsAndExitsZero(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	held := make(chan struct{})
	r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		close(held)
		time.Sleep(500 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	b.endpoint(t, ctx, r.URL)
	p := b.start(t)
	message := b.publish(t, ctx)

	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the dispatcher never sent the delivery")
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.wait(t, 30*time.Second), "exit status after SIGTERM")
	require.Equal(t, "succeeded", b.status(t, ctx, message))
	require.Equal(t, 1, r.Count())
}

// A dispatcher started with another HERALD_SECRET_KEY than the one the
// endpoints' secrets were sealed with cannot sign. That is Herald's fault:
// it sends nothing and charges nothing, logs the cause at error level and
// counts it in herald_dispatcher_faults_total on --metrics-addr. Restarted
// with the right key, it delivers.
func TestWrongSecretKeyChargesNoEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	endpoint, secret := b.endpoint(t, ctx, r.URL)
	wrong := b.start(t, "HERALD_SECRET_KEY="+secretbox.Generate(), "HERALD_METRICS_ADDR=127.0.0.1:0")
	metricsURL := "http://" + wrong.logged(t, regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)) + "/metrics"
	message := b.publish(t, ctx)

	deferred := regexp.MustCompile(`(?m)^herald_dispatcher_faults_total\{cause="secrets"\} [1-9]`)
	require.Eventually(t, func() bool { return deferred.MatchString(scrape(t, metricsURL)) }, 30*time.Second, 100*time.Millisecond,
		"the fault is counted")
	require.Contains(t, scrape(t, metricsURL), "herald_dispatcher_clock_skew_seconds ")
	log := wrong.logged(t, regexp.MustCompile(`(level=ERROR .*cause=secrets.*)`))
	require.Contains(t, log, "sealed under a different secret key")
	require.Zero(t, r.Count(), "nothing was sent")
	var (
		status       string
		attempts     int
		failingSince *time.Time
	)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT d.status, d.attempt_count, e.failing_since FROM herald.deliveries d
JOIN herald.endpoints e ON e.id = d.endpoint_id WHERE d.message_id = $1 AND d.endpoint_id = $2`, message, endpoint).Scan(&status, &attempts, &failingSince))
	require.Equal(t, "pending", status)
	require.Zero(t, attempts, "no attempt was charged")
	require.Nil(t, failingSince, "the endpoint's failing spell has not started")
	require.NoError(t, wrong.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, wrong.wait(t, 30*time.Second))

	b.start(t)
	require.Eventually(t, func() bool { return b.status(t, ctx, message) == "succeeded" }, time.Minute, 100*time.Millisecond)
	require.Equal(t, 1, r.Count())
	require.NoError(t, signing.Verifier{Secrets: []signing.Secret{secret}}.Verify(r.Requests()[0].Header, r.Requests()[0].Body))
}

// A dispatcher says at /readyz, beside its metrics, when it takes jobs: after
// it has warmed its connections (logged with how many) and started River;
// and no longer once it is stopping.
func TestReadyzSaysWhenTheDispatcherTakesJobs(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	b.endpoint(t, ctx, r.URL)
	p := b.start(t, "HERALD_METRICS_ADDR=127.0.0.1:0", "HERALD_SHUTDOWN_GRACE=3s")
	readyz := "http://" + p.logged(t, regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)) + "/readyz"
	require.Eventually(t, func() bool { return readiness(t, readyz) == "200 ready" }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, "5", p.logged(t, regexp.MustCompile(`msg="database connections warmed" connections=(\d+)`)), "every connection of the pool (HERALD_MAX_CONNS)")
	message := b.publish(t, ctx)
	require.Eventually(t, func() bool { return b.status(t, ctx, message) == "succeeded" }, 30*time.Second, 20*time.Millisecond)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return readiness(t, readyz) != "200 ready" }, 10*time.Second, 5*time.Millisecond, "still ready while stopping")
	require.NoError(t, p.wait(t, 30*time.Second))
}

// readiness returns the status code and body of a GET of url, or "" when
// nothing answers.
func readiness(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

// logged waits for a line of p's output that matches re and returns the
// first group of the match.
func (p *process) logged(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	var match []string
	require.Eventually(t, func() bool {
		match = re.FindStringSubmatch(p.output.String())
		return match != nil
	}, 30*time.Second, 20*time.Millisecond, "the dispatcher never logged %s", re)
	return match[1]
}

// scrape returns what a Prometheus scrape of url reads.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	return string(body)
}

func TestBadSettingsAreNamed(t *testing.T) {
	t.Parallel()
	b, _ := setup(t)

	for _, tt := range []struct {
		env  []string
		args []string
		want string
	}{
		{env: []string{"HERALD_DELIVERY_TIMEOUT=soon"}, want: `HERALD_DELIVERY_TIMEOUT="soon" is not a duration`},
		{env: []string{"HERALD_WORKERS=many"}, want: `HERALD_WORKERS="many" is not a whole number`},
		{env: []string{"HERALD_WORKERS=abc"}, want: `HERALD_WORKERS="abc" is not a whole number`},
		{env: []string{"HERALD_MAX_CONNS=lots"}, want: `HERALD_MAX_CONNS="lots" is not a whole number`},
		{env: []string{"HERALD_MIGRATE=maybe"}, want: `HERALD_MIGRATE="maybe" is not true or false`},
		{env: []string{"HERALD_LOG_FORMAT=xml"}, want: `HERALD_LOG_FORMAT="xml": want text or json`},
		{env: []string{"HERALD_DISABLE_AFTER=soon"}, want: `HERALD_DISABLE_AFTER="soon" is not a duration`},
		{env: []string{"HERALD_RETRY_WINDOW=3d"}, want: `HERALD_RETRY_WINDOW="3d" is not a duration; write it like 15s, 3m or 72h`},
		{args: []string{"--log-format", "xml"}, want: `invalid value "xml" for flag -log-format: want text or json`},
		{args: []string{"--workers", "0"}, want: "--workers must be at least 1"},
		{env: []string{"HERALD_RECONCILE_INTERVAL=0s"}, want: "--reconcile-interval must be positive, got 0s"},
		{args: []string{"--timeout", "2m"}, want: "RescueStuckJobsAfter (3s) must exceed the job timeout (4m0s"},
		{args: []string{"--endpoint-max-timeout", "2m"}, want: "the longest endpoint timeout is 2m0s; give one from 1s to 1m0s"},
		{env: []string{"HERALD_SECRET_KEY="}, want: "HERALD_SECRET_KEY is empty"},
		{env: []string{"HERALD_DISABLE_AFTER=5d"}, want: `HERALD_DISABLE_AFTER="5d" is not a duration`},
		{env: []string{"HERALD_ALLOW_CIDRS=localhost"}, want: `allow-list entry "localhost" is not a CIDR range`},
		{env: []string{"HERALD_EGRESS_PROXY=socks5://proxy.internal:1080"}, want: `--egress-proxy / HERALD_EGRESS_PROXY uses "socks5"; Herald speaks HTTP CONNECT`},
		{env: []string{"HERALD_CERTIFICATE_WARNING=2w"}, want: `HERALD_CERTIFICATE_WARNING="2w" is not a duration`},
	} {
		cmd := exec.Command(binary, tt.args...)
		cmd.Env = append(os.Environ(), "HERALD_DATABASE_URL="+b.url, "HERALD_SECRET_KEY="+b.key,
			"HERALD_RESCUE_STUCK_AFTER=3s", "HERALD_ENDPOINT_MAX_TIMEOUT=1s", "HERALD_MIGRATE=false")
		cmd.Env = append(cmd.Env, tt.env...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%v %v: %s", tt.env, tt.args, out)
		require.Equal(t, 1, exit.ExitCode())
		require.Contains(t, string(out), tt.want)
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	t.Parallel()
	help := exec.Command(binary, "--help")
	help.Env = append(os.Environ(), "HERALD_DATABASE_URL=postgres://herald:hunter2@db.internal/herald", "HERALD_WORKERS=7")
	out, err := help.CombinedOutput()
	require.NoError(t, err, "--help exits 0")
	require.NotContains(t, string(out), "hunter2", "--help shows defaults, never the environment's values")
	require.Contains(t, string(out), fmt.Sprintf("(env HERALD_WORKERS) (default %d)", dispatcher.DefaultWorkers))
	for _, want := range []string{
		"HERALD_DATABASE_URL", "HERALD_MIGRATE", "HERALD_MAX_CONNS", "HERALD_LOG_FORMAT", "HERALD_WORKERS", "HERALD_BATCH_SIZE", "HERALD_POLL_INTERVAL", "HERALD_DELIVERY_TIMEOUT",
		"HERALD_MAX_INFLIGHT_PER_ENDPOINT", "HERALD_RESCUE_STUCK_AFTER", "HERALD_RECONCILE_INTERVAL", "HERALD_SHUTDOWN_GRACE", "HERALD_RETRY_BASE",
		"HERALD_RETRY_CAP", "HERALD_RETRY_WINDOW", "HERALD_MAX_RETRY_AFTER", "HERALD_ALLOW_CIDRS", "HERALD_SECRET_KEY",
		"HERALD_DISABLE_AFTER", "HERALD_FAILING_WARNING_AFTER", "HERALD_OPS_TENANT", "HERALD_METRICS_ADDR",
		"HERALD_ENDPOINT_MAX_TIMEOUT", "HERALD_ENDPOINT_MIN_RETRY_BASE", "HERALD_ENDPOINT_MAX_RETRY_CAP", "HERALD_ENDPOINT_MAX_RETRY_WINDOW",
		"HERALD_EGRESS_PROXY", "HERALD_CERTIFICATE_WARNING",
	} {
		require.Contains(t, string(out), want)
	}
}

// syncBuffer is a bytes.Buffer safe for the process's two output streams.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// --egress-proxy sends deliveries through the proxy: the receiver's only
// connections come from it.
func TestEgressProxyFlagSendsThroughTheProxy(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	proxy := webhooktest.NewConnectProxy(t)
	proxy.Authorization = "Basic aGVyYWxkOnMzY3JldA==" // herald:s3cret
	r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	b.endpoint(t, ctx, r.URL)
	p := b.start(t, "HERALD_EGRESS_PROXY=http://herald:s3cret@"+proxy.Addr)
	message := b.publish(t, ctx)

	require.Eventually(t, func() bool { return b.status(t, ctx, message) == "succeeded" }, 30*time.Second, 100*time.Millisecond)
	require.True(t, proxy.Made(r.Requests()[0].RemoteAddr), "the request came through the proxy")
	require.NotEmpty(t, proxy.Connects())
	require.Contains(t, p.output.String(), "http://herald:xxxxx@"+proxy.Addr, "the proxy is logged without its password")
	require.NotContains(t, p.output.String(), "s3cret")
}
