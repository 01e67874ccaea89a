package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/cmd/internal/programtest"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/store"
)

// binary is the herald command built from this package, once per test run.
var binary string

func TestMain(m *testing.M) { programtest.Main(m, "herald", &binary) }

// testBundle is Herald in the test's process (the api on loopback and a
// dispatcher) on a fresh database, with an operator key for the CLI.
type testBundle struct {
	url      string
	operator string
	pool     *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	st, err := store.New(pool, store.Config{Box: box, CheckURL: guard.CheckURL})
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	server, err := api.New(api.Config{Pool: pool, Store: st, Logger: logger})
	require.NoError(t, err)
	ts := httptest.NewServer(server.Handler())
	t.Cleanup(ts.Close)
	d, err := dispatcher.New(dispatcher.Config{
		Pool: pool, PollInterval: 100 * time.Millisecond, Logger: logger,
		Delivery: delivery.Config{Secrets: st, Timeout: 5 * time.Second, Transport: guard.Transport(),
			Policy: schedule.Policy{Base: 50 * time.Millisecond, Cap: 200 * time.Millisecond, Window: time.Second}},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "dispatcher stops cleanly")
	})
	_, key, err := auth.CreateAPIKey(context.Background(), pool, "", "cli test")
	require.NoError(t, err)
	return &testBundle{url: ts.URL, operator: key, pool: pool}
}

// result is what one run of the CLI printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// herald runs the CLI with the bundle's address and key in its
// environment, as an operator's shell would hold them.
func (b *testBundle) herald(t *testing.T, args ...string) result {
	t.Helper()
	cmd := b.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func (b *testBundle) command(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "HERALD_API_URL="+b.url, "HERALD_API_KEY="+b.operator, "HERALD_TENANT=")
	return cmd
}

// ok runs the CLI and requires exit code 0.
func (b *testBundle) ok(t *testing.T, args ...string) string {
	t.Helper()
	r := b.herald(t, args...)
	require.Equal(t, 0, r.code, "herald %v: %s%s", args, r.stdout, r.stderr)
	return r.stdout
}

// okJSON runs the CLI with --json and decodes its output into out.
func (b *testBundle) okJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	raw := b.ok(t, append(args, "--json")...)
	require.NoError(t, json.Unmarshal([]byte(raw), out), raw)
}

func TestTenantsAndEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	receiver := webhooktest.NewReceiver(t, webhooktest.Status(200))

	require.Contains(t, b.ok(t, "tenants", "create", "acme", "--name", "Acme Inc"), "Acme Inc")
	list := b.ok(t, "tenants", "list")
	require.Regexp(t, `(?m)^ID\s+NAME\s+CREATED\n`, list)
	require.Regexp(t, `(?m)^acme\s+Acme Inc\s+`, list)
	var tenant client.Tenant
	b.okJSON(t, &tenant, "tenants", "show", "acme")
	require.Equal(t, "Acme Inc", tenant.Name)

	var ep client.Endpoint
	b.okJSON(t, &ep, "endpoints", "create", "--tenant", "acme", "--url", receiver.URL, "--event-types", "invoice.paid, invoice.voided", "--description", "billing")
	require.Equal(t, []string{"invoice.paid", "invoice.voided"}, ep.EventTypes)
	id := ep.ID.String()
	require.Regexp(t, `(?m)^`+id+`\s+enabled\s+`+receiver.URL+`\s+invoice.paid,invoice.voided\s+billing`, b.ok(t, "endpoints", "list", "--tenant", "acme"))

	// Flags may follow the arguments, and HERALD_TENANT stands in for --tenant.
	shown := b.ok(t, "endpoints", "disable", id, "--reason", "maintenance", "--tenant", "acme")
	require.Regexp(t, `state:\s+disabled`, shown)
	require.Contains(t, shown, "maintenance")
	cmd := b.command("endpoints", "enable", id)
	cmd.Env = append(cmd.Env, "HERALD_TENANT=acme")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `state:\s+enabled`, string(out))

	secret := strings.TrimSpace(b.ok(t, "endpoints", "reveal", id, "--tenant", "acme"))
	require.True(t, strings.HasPrefix(secret, "whsec_"), secret)
	rotated := strings.TrimSpace(b.ok(t, "endpoints", "rotate", id, "--tenant", "acme", "--grace", "1h"))
	require.True(t, strings.HasPrefix(rotated, "whsec_"), rotated)
	require.NotEqual(t, secret, rotated)
	require.Equal(t, rotated, strings.TrimSpace(b.ok(t, "endpoints", "reveal", id, "--tenant", "acme")))

	require.Contains(t, b.ok(t, "endpoints", "test", id, "--tenant", "acme"), "test event")
	require.Eventually(t, func() bool { return receiver.Count() == 1 }, 10*time.Second, 20*time.Millisecond)

	var link client.PortalLink
	b.okJSON(t, &link, "portal-link", "--tenant", "acme", "--ttl", "5m")
	require.Contains(t, link.URL, "/portal/login?token=hpl_")
	require.WithinDuration(t, time.Now().Add(5*time.Minute), link.ExpiresAt, time.Minute)
}

func TestErrorsAndExitCodes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ok(t, "tenants", "create", "acme")

	r := b.herald(t, "endpoints", "create", "--tenant", "acme", "--url", "ftp://acme.example/hooks")
	require.Equal(t, exitAPI, r.code, r.stderr)
	require.Contains(t, r.stderr, `url has scheme "ftp"; use https (or http)`, "the API's sentence")
	require.Contains(t, r.stderr, "field: url")
	require.Contains(t, r.stderr, "HTTP 422")
	require.Empty(t, r.stdout)

	r = b.herald(t, "endpoints", "show", "0193c2a4-0000-7000-8000-000000000000", "--tenant", "acme")
	require.Equal(t, exitAPI, r.code)
	require.Contains(t, r.stderr, "was not found")

	for _, args := range [][]string{
		{"frobnicate"},
		{"endpoints"},
		{"endpoints", "show", "--tenant", "acme"},
		{"endpoints", "show", "not-an-id", "--tenant", "acme"},
		{"endpoints", "list"},
		{"replay", "0193c2a4-0000-7000-8000-000000000000", "--tenant", "acme", "--since", "yesterday"},
		{"publish", "--tenant", "acme", "--type", "a.b", "--object", "o", "--data", "{"},
		{"tenants", "list", "--colour"},
	} {
		r := b.herald(t, args...)
		require.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stderr)
	}

	cmd := b.command("tenants", "list")
	cmd.Env = append(cmd.Env, "HERALD_API_KEY=")
	out, _ := cmd.CombinedOutput()
	require.Equal(t, exitUsage, cmd.ProcessState.ExitCode())
	require.Contains(t, string(out), "API key is empty")

	cmd = b.command("tenants", "list", "--api-url", "http://127.0.0.1:1")
	out, _ = cmd.CombinedOutput()
	require.Equal(t, exitUnreachable, cmd.ProcessState.ExitCode())
	require.Contains(t, string(out), "cannot reach the api at http://127.0.0.1:1")

	r = b.herald(t, "tenants", "list", "--api-key", "hk_wrong")
	require.Equal(t, exitAPI, r.code)
	require.Contains(t, r.stderr, "HTTP 401")
}

// syncBuffer is a bytes.Buffer a running command writes while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines collects a running command's stdout line by line.
type lines struct {
	mu  sync.Mutex
	all []string
}

// snapshot returns the lines so far.
func (l *lines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

// count returns how many lines hold every one of substrs.
func (l *lines) count(substrs ...string) int {
	n := 0
next:
	for _, line := range l.snapshot() {
		for _, s := range substrs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		n++
	}
	return n
}

func (l *lines) has(substrs ...string) bool { return l.count(substrs...) > 0 }

// tail starts `herald messages tail` for acme, polling every 100 ms, and
// waits until it follows. Its lines gather in seen; scanned closes when its
// output ends.
func (b *testBundle) tail(t *testing.T, args ...string) (*exec.Cmd, *lines, *syncBuffer, chan struct{}) {
	t.Helper()
	tail := b.command(append([]string{"messages", "tail", "--tenant", "acme", "--interval", "100ms"}, args...)...)
	stdout, err := tail.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	tail.Stderr = stderr
	require.NoError(t, tail.Start())
	t.Cleanup(func() { _ = tail.Process.Kill(); _ = tail.Wait() })
	seen := &lines{}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			seen.mu.Lock()
			seen.all = append(seen.all, s.Text())
			seen.mu.Unlock()
		}
	}()
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "following") }, 10*time.Second, 20*time.Millisecond)
	return tail, seen, stderr, scanned
}

// A message whose publishing transaction began before another message's
// and committed after the tail showed that one still appears: its
// publication time is older than the newest the tail has seen.
func TestTailShowsAMessageCommittedLate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.ok(t, "tenants", "create", "acme")
	_, seen, _, _ := b.tail(t)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	late, err := outbox.Publish(ctx, tx, outbox.Message{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_late", Data: map[string]any{}})
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	var early client.Message
	b.okJSON(t, &early, "publish", "--tenant", "acme", "--type", "invoice.paid", "--object", "inv_early", "--data", "{}")
	require.Eventually(t, func() bool { return seen.has(early.ID.String()) }, 10*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a few polls past the later message
	require.NoError(t, tx.Commit(ctx))

	require.Eventually(t, func() bool { return seen.has(late.ID.String(), "inv_late") }, 10*time.Second, 20*time.Millisecond,
		"the message committed late is shown: %v", seen.snapshot())
	require.Equal(t, 1, seen.count(early.ID.String(), "no endpoint subscribed"), "a message looked at again is not shown again: %v", seen.snapshot())
}

func TestPublishTailResendReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	receiver := webhooktest.NewReceiver(t, webhooktest.Status(200, 500, 200))
	b.ok(t, "tenants", "create", "acme")
	var ep client.Endpoint
	b.okJSON(t, &ep, "endpoints", "create", "--tenant", "acme", "--url", receiver.URL)
	var before client.Message
	b.okJSON(t, &before, "publish", "--tenant", "acme", "--type", "invoice.paid", "--object", "inv_1", "--data", `{"amount":1}`)
	require.Eventually(t, func() bool { return receiver.Count() == 1 }, 10*time.Second, 20*time.Millisecond)

	tail, seen, stderr, scanned := b.tail(t)

	var m client.Message
	b.okJSON(t, &m, "publish", "--tenant", "acme", "--type", "invoice.paid", "--object", "inv_42", "--data", `{"amount":4200}`, "--idempotency-key", "k1")
	require.Equal(t, int64(1), m.Object.Version)
	var again client.Message
	b.okJSON(t, &again, "publish", "--tenant", "acme", "--type", "invoice.paid", "--object", "inv_42", "--data", `{"amount":4200}`, "--idempotency-key", "k1")
	require.Equal(t, m.ID, again.ID, "the idempotency key is sent")

	// The tail shows the new message, then its delivery's state as it
	// changes: the receiver fails the first attempt and takes the retry.
	require.Eventually(t, func() bool { return seen.has(m.ID.String(), "inv_42 v1", "succeeded 1") }, 15*time.Second, 20*time.Millisecond, "the tail shows the delivery succeeded")
	require.GreaterOrEqual(t, seen.count(m.ID.String()), 2, "the tail showed the message before its delivery succeeded: %v", seen.snapshot())
	require.False(t, seen.has(before.ID.String()), "a message published before the tail started is not shown")

	shown := b.ok(t, "messages", "show", m.ID.String(), "--tenant", "acme")
	require.Regexp(t, ep.ID.String()+`\s+succeeded\s+2`, shown)
	require.Regexp(t, `(?m)^\S+ \S+\s+`+m.ID.String()+`\s+invoice.paid\s+inv_42 v1\s+succeeded 1`, b.ok(t, "messages", "list", "--tenant", "acme", "--status", "succeeded"))

	require.Contains(t, b.ok(t, "resend", m.ID.String(), ep.ID.String(), "--tenant", "acme"), "was succeeded")
	count := receiver.Count()
	require.Eventually(t, func() bool { return receiver.Count() == count+1 }, 10*time.Second, 20*time.Millisecond)

	require.NoError(t, tail.Process.Signal(syscall.SIGINT))
	<-scanned
	require.NoError(t, tail.Wait(), "Ctrl-C ends a tail with exit code 0: %s", stderr.String())

	r := b.herald(t, "replay", ep.ID.String(), "--tenant", "acme", "--since", "1h", "--interval", "50ms")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "replay [##############################] 100%  2/2 done")
	require.Regexp(t, `status:\s+completed`, r.stdout)
	require.Regexp(t, `deliveries:\s+2 done of 2`, r.stdout)
}

// A replay further back than the tenant's history is kept is refused by
// the API, and the CLI says from when one may start.
func TestReplayBeforeTheRetentionHorizon(t *testing.T) {
	t.Parallel()
	b := setup(t)
	receiver := webhooktest.NewReceiver(t, webhooktest.Status(200))
	b.ok(t, "tenants", "create", "acme")
	var ep client.Endpoint
	b.okJSON(t, &ep, "endpoints", "create", "--tenant", "acme", "--url", receiver.URL)
	r := b.herald(t, "replay", ep.ID.String(), "--tenant", "acme", "--since", "800h", "--no-wait")
	require.Equal(t, exitAPI, r.code, r.stderr)
	require.Contains(t, r.stderr, "is before the retention horizon: this tenant's history is kept 2592000 seconds (720h0m0s), so the earliest replayable time is ")
	require.Contains(t, r.stderr, "field: since")
	require.Contains(t, r.stderr, "HTTP 422")
	require.Equal(t, 0, b.herald(t, "replay", ep.ID.String(), "--tenant", "acme", "--since", "700h", "--no-wait").code)
}

func TestReceiverCheck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	healthy := webhooktest.NewReceiver(t, webhooktest.Status(200))
	failing := webhooktest.NewReceiver(t, webhooktest.Status(500))
	b.ok(t, "tenants", "create", "acme")
	var good, bad client.Endpoint
	b.okJSON(t, &good, "endpoints", "create", "--tenant", "acme", "--url", healthy.URL)
	b.okJSON(t, &bad, "endpoints", "create", "--tenant", "acme", "--url", failing.URL)

	out := b.ok(t, "endpoints", "check", good.ID.String(), "--tenant", "acme", "--interval", "100ms")
	for _, want := range []string{
		"1. The same event twice in a row: succeeded",
		"2. Two copies of one event at the same moment: succeeded",
		"3. 5 versions of one object, out of order: succeeded",
		"4. An old event replayed: skipped",
		"Verify on your side: The side effect of msg_",
		"ends at version 5",
		"Also check yourself",
	} {
		require.Contains(t, out, want)
	}
	require.Equal(t, 9, strings.Count(out, "HTTP 200"), out)
	require.Equal(t, 9, healthy.Count())

	r := b.herald(t, "endpoints", "check", good.ID.String(), "--tenant", "acme")
	require.Equal(t, exitAPI, r.code, "one check a minute per endpoint")
	require.Contains(t, r.stderr, "Retry-After")
	require.Contains(t, r.stderr, "HTTP 429")

	r = b.herald(t, "endpoints", "check", bad.ID.String(), "--tenant", "acme", "--interval", "100ms", "--json")
	require.Equal(t, exitCheckFailed, r.code, r.stderr)
	var c client.ReceiverCheck
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &c), r.stdout)
	require.Equal(t, client.CheckCompleted, c.Status)
	require.Equal(t, client.StepFailed, c.Steps[0].Status)
	require.Equal(t, 500, c.Steps[0].Sends[0].StatusCode)
}
