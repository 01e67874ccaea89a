package receivercheck_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/receivercheck"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

type testBundle struct {
	ctx      context.Context
	pool     *pgxpool.Pool
	store    *store.Store
	jobs     *river.Client[pgx.Tx]
	endpoint store.Endpoint
	received *receiver
}

// receiver verifies every request's signature and records what came, with
// the webhook-id, the version and how many requests were in at once.
type receiver struct {
	verifier signing.Verifier
	mu       sync.Mutex
	got      []got
	inflight int
	peak     int
	status   int
}

type got struct {
	webhookID string
	version   int64
	verified  error
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.inflight++
	r.peak = max(r.peak, r.inflight)
	status := r.status
	r.mu.Unlock()
	body, _ := io.ReadAll(req.Body)
	time.Sleep(50 * time.Millisecond) // long enough for two copies sent together to overlap
	var payload struct {
		Object struct{ Version int64 } `json:"object"`
	}
	_ = json.Unmarshal(body, &payload)
	r.mu.Lock()
	r.inflight--
	r.got = append(r.got, got{webhookID: req.Header.Get("webhook-id"), version: payload.Object.Version, verified: r.verifier.Verify(req.Header, body)})
	r.mu.Unlock()
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"stored":true}`))
}

// setup runs a dispatcher whose transport is guard's, and makes an
// endpoint at a receiver answering status.
func setup(t *testing.T, guard *ssrf.Guard, status int) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box})
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	d, err := dispatcher.New(dispatcher.Config{Pool: pool, PollInterval: 100 * time.Millisecond, Logger: logger,
		Delivery: delivery.Config{Secrets: st, Timeout: 2 * time.Second, Transport: guard.Transport()}})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	jobs, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: migrations.Schema, Logger: logger})
	require.NoError(t, err)

	_, err = st.CreateTenant(ctx, store.NewTenant{ID: "acme", Name: "Acme"})
	require.NoError(t, err)
	rec := &receiver{status: status}
	server := newServer(t, rec)
	ep, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: server})
	require.NoError(t, err)
	secret, err := st.RevealSecret(ctx, ep.ID)
	require.NoError(t, err)
	rec.verifier = signing.Verifier{Secrets: []signing.Secret{secret}}
	return &testBundle{ctx: ctx, pool: pool, store: st, jobs: jobs, endpoint: ep, received: rec}
}

func (b *testBundle) start(t *testing.T) (receivercheck.Check, error) {
	t.Helper()
	var c receivercheck.Check
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		c, err = receivercheck.Start(b.ctx, tx, b.jobs, "acme", b.endpoint.ID)
		return err
	})
	return c, err
}

func (b *testBundle) finished(t *testing.T, id uuid.UUID) receivercheck.Check {
	t.Helper()
	var c receivercheck.Check
	require.Eventually(t, func() bool {
		var err error
		c, err = receivercheck.Get(b.ctx, b.pool, "acme", b.endpoint.ID, id)
		require.NoError(t, err)
		return c.Status == receivercheck.StatusCompleted
	}, 20*time.Second, 20*time.Millisecond)
	return c
}

func loopback() *ssrf.Guard { return ssrf.New(netip.MustParsePrefix("127.0.0.0/8")) }

func TestCheckSendsThePreLaunchSituations(t *testing.T) {
	t.Parallel()
	b := setup(t, loopback(), http.StatusOK)
	started, err := b.start(t)
	require.NoError(t, err)
	require.Equal(t, receivercheck.StatusRunning, started.Status)
	c := b.finished(t, started.ID)
	require.False(t, c.Failed())
	require.Len(t, c.Steps, 4)

	dup, conc, shuffled, old := c.Steps[0], c.Steps[1], c.Steps[2], c.Steps[3]
	require.Equal(t, receivercheck.StepDuplicate, dup.Name)
	require.Equal(t, receivercheck.StepSucceeded, dup.Status)
	require.Len(t, dup.Sends, 2)
	require.Equal(t, dup.Sends[0].WebhookID, dup.Sends[1].WebhookID, "the same event twice")
	for _, s := range append(dup.Sends, conc.Sends...) {
		require.Equal(t, 200, s.StatusCode)
		require.Equal(t, `{"stored":true}`, s.Response)
		require.NotNil(t, s.SentAt)
	}
	require.Contains(t, dup.Verify, dup.Sends[0].WebhookID)

	require.Equal(t, receivercheck.StepSucceeded, conc.Status)
	require.Equal(t, conc.Sends[0].WebhookID, conc.Sends[1].WebhookID)
	require.NotEqual(t, dup.Sends[0].WebhookID, conc.Sends[0].WebhookID)

	require.Equal(t, receivercheck.StepSucceeded, shuffled.Status)
	require.Len(t, shuffled.Sends, receivercheck.ShuffledVersions)
	var sentVersions []int64
	for _, s := range shuffled.Sends {
		sentVersions = append(sentVersions, s.Version)
		require.Equal(t, shuffled.Sends[0].ObjectID, s.ObjectID, "one object")
	}
	require.Equal(t, []int64{2, 4, 1, 5, 3}, sentVersions, "receivercheck.ShuffledOrder")
	require.Contains(t, shuffled.Verify, "ends at version 5")

	require.Equal(t, receivercheck.StepSkipped, old.Status, "no check is a day old yet")
	require.Empty(t, old.Sends)
	require.Contains(t, old.Note, "a day old")

	// What the receiver saw: every request signed with the endpoint's
	// secret, the two concurrent copies inside the handler together.
	b.received.mu.Lock()
	require.Len(t, b.received.got, 9)
	for _, g := range b.received.got {
		require.NoError(t, g.verified)
	}
	require.Equal(t, dup.Sends[0].WebhookID, b.received.got[0].webhookID)
	require.Equal(t, dup.Sends[0].WebhookID, b.received.got[1].webhookID)
	require.Equal(t, int64(2), b.received.got[4].version)
	require.Equal(t, 2, b.received.peak, "the concurrent copies overlapped")
	b.received.mu.Unlock()

	// Checks of one endpoint are a minute apart at least.
	_, err = b.start(t)
	var tooSoon *receivercheck.TooSoonError
	require.ErrorAs(t, err, &tooSoon)
	require.ErrorIs(t, err, receivercheck.ErrTooSoon)
	require.Greater(t, tooSoon.RetryAfter, 50*time.Second)

	// Two days later, the next check replays the first one's event.
	_, err = b.pool.Exec(b.ctx, `UPDATE herald.receiver_checks SET created_at = created_at - interval '2 days'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE herald.messages SET created_at = created_at - interval '2 days'`)
	require.NoError(t, err)
	second, err := b.start(t)
	require.NoError(t, err)
	c2 := b.finished(t, second.ID)
	replayed := c2.Steps[3]
	require.Equal(t, receivercheck.StepSucceeded, replayed.Status)
	require.Len(t, replayed.Sends, 1)
	require.Equal(t, dup.Sends[0].WebhookID, replayed.Sends[0].WebhookID, "the first check's event, same webhook-id")
	require.WithinDuration(t, time.Now().Add(-48*time.Hour), replayed.Sends[0].PublishedAt, time.Minute)
	require.Equal(t, []int64{7, 9, 6, 10, 8}, func() (v []int64) {
		for _, s := range c2.Steps[2].Sends {
			v = append(v, s.Version)
		}
		return v
	}(), "the object's versions go on from the last check")

	// The check's events are never fanned out to other endpoints.
	var deliveries int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM herald.deliveries`).Scan(&deliveries))
	require.Zero(t, deliveries)
}

func TestCheckReportsFailuresAndGoesThroughTheGuard(t *testing.T) {
	t.Parallel()
	b := setup(t, loopback(), http.StatusInternalServerError)
	started, err := b.start(t)
	require.NoError(t, err)
	c := b.finished(t, started.ID)
	require.True(t, c.Failed())
	require.Equal(t, receivercheck.StepFailed, c.Steps[0].Status)
	require.Equal(t, 500, c.Steps[0].Sends[0].StatusCode)

	// A dispatcher whose SSRF guard allows nothing local refuses to send.
	guarded := setup(t, ssrf.New(), http.StatusOK)
	started, err = guarded.start(t)
	require.NoError(t, err)
	c = guarded.finished(t, started.ID)
	require.Equal(t, receivercheck.StepFailed, c.Steps[0].Status)
	require.Zero(t, c.Steps[0].Sends[0].StatusCode)
	require.Contains(t, c.Steps[0].Sends[0].Error, "SSRF guard")
	guarded.received.mu.Lock()
	require.Empty(t, guarded.received.got)
	guarded.received.mu.Unlock()

	// A disabled endpoint is not checked.
	_, err = b.store.DisableEndpoint(b.ctx, b.endpoint.ID, "maintenance")
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE herald.receiver_checks SET created_at = created_at - interval '2 minutes'`)
	require.NoError(t, err)
	_, err = b.start(t)
	require.ErrorIs(t, err, receivercheck.ErrEndpointDisabled)
}

func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}
