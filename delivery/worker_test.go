package delivery_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/internal/sanitize"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

func TestWorkerSendsSignedWebhook(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	large := strings.Repeat("é", 5000) // 10,000 bytes: more than is stored
	r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(large))
	})
	previous, err := signing.GenerateEd25519Secret()
	require.NoError(t, err)
	endpoint := b.endpoint(t, ctx, r.URL, previous)
	// During a rotation's grace period both keys sign.
	current, err := b.store.RotateSecret(ctx, endpoint, time.Hour)
	require.NoError(t, err)
	message := b.message(t, ctx)
	id := b.enqueue(t, ctx, message, endpoint)

	d := b.waitStatus(t, ctx, id, "succeeded")
	require.Equal(t, 1, d.AttemptCount)
	require.Equal(t, 200, *d.LastStatusCode)
	require.Nil(t, d.LastError)
	require.NotNil(t, d.CompletedAt)
	require.Nil(t, d.NextAttemptAt)

	reqs := r.Requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Equal(t, b.body(t, ctx, message), string(req.Body), "the body must be the stored wire body, byte for byte")
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(req.Header.Get("User-Agent"), "Herald/"), "user-agent %q", req.Header.Get("User-Agent"))
	require.Equal(t, "msg_"+message.String(), req.Header.Get(signing.HeaderID))
	require.Len(t, strings.Fields(req.Header.Get(signing.HeaderSignature)), 2, "one signature per active secret")
	for name, secret := range map[string]signing.Secret{"current": current, "previous": previous} {
		public, err := secret.Public()
		require.NoError(t, err)
		require.NoError(t, signing.Verifier{Secrets: []signing.Secret{public}}.Verify(req.Header, req.Body),
			"a receiver holding only the %s key must verify", name)
	}

	attempts := b.attempts(t, ctx, id)
	require.Len(t, attempts, 1)
	a := attempts[0]
	require.Equal(t, 1, a.Number)
	require.Equal(t, "scheduled", a.Trigger)
	require.Equal(t, "succeeded", a.Outcome)
	require.Equal(t, 200, *a.StatusCode)
	require.Nil(t, a.Error)
	require.LessOrEqual(t, len(a.Excerpt), delivery.MaxResponseStored, "at most 4 KiB of the response are stored")
	require.True(t, strings.HasSuffix(a.Excerpt, sanitize.Marker), "a cut excerpt is marked")
	require.True(t, strings.HasPrefix(large, strings.TrimSuffix(a.Excerpt, sanitize.Marker)), "the excerpt is the response's start")
	require.Greater(t, len(a.Excerpt), delivery.MaxResponseStored-len(sanitize.Marker)-len("é"))
	require.WithinDuration(t, req.Received, a.StartedAt, 5*time.Second)
	require.Equal(t, *d.FirstAttemptAt, a.StartedAt)
	for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature", "content-type", "user-agent"} {
		require.Equal(t, req.Header.Get(name), a.RequestHeaders[name], "stored request header %s", name)
	}
	for name, value := range a.RequestHeaders {
		require.NotContains(t, value, current.String(), "header %s holds the secret", name)
		require.NotContains(t, value, previous.String(), "header %s holds the secret", name)
		require.NotContains(t, value, signing.HMACSecretPrefix, "header %s holds a secret", name)
		require.NotContains(t, value, signing.Ed25519PrivateKeyPrefix, "header %s holds a secret", name)
	}
}

func TestWorkerRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	r := webhooktest.NewReceiver(t, webhooktest.Status(500, 500, 200))
	endpoint := b.endpoint(t, ctx, r.URL)
	secret := b.secret(t, ctx, endpoint)
	message := b.message(t, ctx)
	id := b.enqueue(t, ctx, message, endpoint)

	d := b.waitStatus(t, ctx, id, "succeeded")
	require.Equal(t, 3, d.AttemptCount)
	require.Equal(t, 3, r.Count())

	attempts := b.attempts(t, ctx, id)
	require.Len(t, attempts, 3)
	for i, want := range []struct {
		status  int
		outcome string
	}{{500, "retry"}, {500, "retry"}, {200, "succeeded"}} {
		require.Equal(t, i+1, attempts[i].Number)
		require.Equal(t, want.status, *attempts[i].StatusCode)
		require.Equal(t, want.outcome, attempts[i].Outcome)
	}
	require.Equal(t, "HTTP 500 Internal Server Error", *attempts[0].Error)
	require.Equal(t, attempts[0].StartedAt, *d.FirstAttemptAt, "the window counts from the first attempt")
	require.Equal(t, attempts[2].StartedAt, *d.LastAttemptAt)

	verifier := signing.Verifier{Secrets: []signing.Secret{secret}}
	for i, req := range r.Requests() {
		require.Equal(t, "msg_"+message.String(), req.Header.Get(signing.HeaderID), "webhook-id is stable across attempts")
		require.NoError(t, verifier.Verify(req.Header, req.Body), "attempt %d", i+1)
		require.Equal(t, attempts[i].RequestHeaders["webhook-signature"], req.Header.Get(signing.HeaderSignature),
			"attempt %d is signed for its own timestamp", i+1)
	}
}

func TestWorkerGoneDisablesEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	gone := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusGone))
	healthy := webhooktest.NewReceiver(t, webhooktest.Status(200))
	goneEndpoint := b.endpoint(t, ctx, gone.URL)
	healthyEndpoint := b.endpoint(t, ctx, healthy.URL)
	queued := b.pendingDelivery(t, ctx, b.message(t, ctx), goneEndpoint)
	untouched := b.pendingDelivery(t, ctx, b.message(t, ctx), healthyEndpoint)

	id := b.enqueue(t, ctx, b.message(t, ctx), goneEndpoint)
	d := b.waitStatus(t, ctx, id, "failed")
	require.Equal(t, 410, *d.LastStatusCode)
	require.Equal(t, "HTTP 410 Gone", *d.LastError)
	require.Equal(t, "endpoint_gone", b.attempts(t, ctx, id)[0].Outcome)

	var (
		enabled    bool
		reason     *string
		disabledAt *time.Time
	)
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT enabled, disabled_reason, disabled_at FROM herald.endpoints WHERE id = $1", goneEndpoint).
		Scan(&enabled, &reason, &disabledAt))
	require.False(t, enabled)
	require.Equal(t, "410 Gone", *reason)
	require.NotNil(t, disabledAt)

	require.Equal(t, "cancelled", b.delivery(t, ctx, queued).Status, "the endpoint's other pending deliveries are cancelled")
	require.Equal(t, "pending", b.delivery(t, ctx, untouched).Status, "another endpoint's deliveries are not touched")

	// A delivery queued for the disabled endpoint is cancelled unsent.
	later := b.enqueue(t, ctx, b.message(t, ctx), goneEndpoint)
	b.waitStatus(t, ctx, later, "cancelled")
	require.Empty(t, b.attempts(t, ctx, later))
	require.Equal(t, 1, gone.Count())
}

func TestWorkerHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	r := webhooktest.NewReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	id := b.enqueue(t, ctx, b.message(t, ctx), b.endpoint(t, ctx, r.URL))

	b.waitStatus(t, ctx, id, "succeeded")
	attempts := b.attempts(t, ctx, id)
	require.Len(t, attempts, 2)
	firstEnded := attempts[0].StartedAt.Add(time.Duration(attempts[0].DurationMS) * time.Millisecond)
	require.GreaterOrEqual(t, attempts[1].StartedAt.Sub(firstEnded), 2*time.Second-time.Millisecond,
		"the retry must wait for Retry-After (duration_ms is rounded down)")
	require.GreaterOrEqual(t, r.Requests()[1].Received.Sub(r.Requests()[0].Received), 2*time.Second)
}

func TestWorkerDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: once})

	target := webhooktest.NewReceiver(t, webhooktest.Status(200))
	redirecting := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/moved", http.StatusFound)
	})
	id := b.enqueue(t, ctx, b.message(t, ctx), b.endpoint(t, ctx, redirecting.URL))

	d := b.waitStatus(t, ctx, id, "failed")
	require.Equal(t, 302, *d.LastStatusCode)
	require.Contains(t, *d.LastError, "redirects are not followed")
	require.Contains(t, *d.LastError, target.URL+"/moved")
	require.Equal(t, "exhausted", b.attempts(t, ctx, id)[0].Outcome)
	require.Equal(t, 1, redirecting.Count())
	require.Zero(t, target.Count(), "the redirect target must not be requested")
}

func TestWorkerTimeout(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: once, Timeout: 200 * time.Millisecond})

	r := webhooktest.NewReceiver(t, webhooktest.Hang())
	id := b.enqueue(t, ctx, b.message(t, ctx), b.endpoint(t, ctx, r.URL))

	d := b.waitStatus(t, ctx, id, "failed")
	require.Nil(t, d.LastStatusCode)
	require.Equal(t, "timed out after 200ms", *d.LastError)
	a := b.attempts(t, ctx, id)[0]
	require.Nil(t, a.StatusCode)
	require.Equal(t, "timed out after 200ms", *a.Error)
	require.GreaterOrEqual(t, a.DurationMS, 200)
}

// Reading the endpoint's secrets is Herald's own work. However long it
// takes (the database is slow, its pool is busy), the endpoint still gets
// its whole timeout to answer: the attempt succeeds and is not recorded as
// the endpoint's timeout.
func TestWorkerSecretLookupIsNotChargedToTheEndpoint(t *testing.T) {
	t.Parallel()
	slow := &slowSecrets{delay: 300 * time.Millisecond}
	b, ctx := setup(t, delivery.Config{Policy: once, Timeout: 200 * time.Millisecond, Secrets: slow})
	slow.source.Store(b.store)

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	id := b.enqueue(t, ctx, b.message(t, ctx), b.endpoint(t, ctx, r.URL))

	b.waitStatus(t, ctx, id, "succeeded")
	a := b.attempts(t, ctx, id)
	require.Len(t, a, 1)
	require.Equal(t, "succeeded", a[0].Outcome)
	require.Equal(t, 1, r.Count())
}

// slowSecrets is a SecretSource that takes delay before asking source.
type slowSecrets struct {
	delay  time.Duration
	source atomic.Pointer[store.Store]
}

func (s *slowSecrets) ActiveSecrets(ctx context.Context, endpointID uuid.UUID, now time.Time) ([]signing.Secret, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(s.delay):
	}
	return s.source.Load().ActiveSecrets(ctx, endpointID, now)
}

func TestWorkerNetworkError(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: once})

	// Nothing listens on port 1 of loopback.
	id := b.enqueue(t, ctx, b.message(t, ctx), b.endpoint(t, ctx, "http://127.0.0.1:1/hook?token=s3cr3t"))

	d := b.waitStatus(t, ctx, id, "failed")
	require.Contains(t, *d.LastError, "connection refused")
	require.NotContains(t, *d.LastError, "s3cr3t", "the error must not quote the URL, which may hold a token")
}

func TestWorkerSkipsDisabledEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	_, err := b.store.DisableEndpoint(ctx, endpoint, "paused by its owner")
	require.NoError(t, err)
	id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)

	d := b.waitStatus(t, ctx, id, "cancelled")
	require.NotNil(t, d.CompletedAt)
	require.Zero(t, d.AttemptCount)
	require.Zero(t, r.Count())
}

func TestWorkerSkipsDeletedEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	message := b.message(t, ctx)
	id := b.pendingDelivery(t, ctx, message, endpoint)
	// Erased, with its history (package erasure), before its job runs.
	jobs, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	e, err := erasure.StartEndpoint(ctx, b.pool, jobs, tenant, endpoint)
	require.NoError(t, err)
	require.NoError(t, erasure.NewWorker(b.pool, 0, nil).Work(ctx, &river.Job[erasure.Args]{Args: erasure.Args{ErasureID: e.ID}}))
	job, err := b.client.Insert(ctx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		row, err := b.client.JobGet(ctx, job.Job.ID)
		require.NoError(t, err)
		return row.State == "completed"
	}, 20*time.Second, 20*time.Millisecond)
	require.Zero(t, r.Count())
}

func TestWorkerWaitsForScheduledRetry(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	// As after a crash between recording a failed attempt and snoozing: the
	// job runs early, the delivery row knows the retry time.
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
	// Wall-clock times, as Postgres stores them (to the microsecond): the
	// worker and River compare wall clocks, and a monotonic reading drifts
	// from the wall clock while the system clock is being slewed.
	due := time.Now().Add(time.Second).Truncate(time.Microsecond)
	_, err := b.pool.Exec(ctx, "UPDATE herald.deliveries SET next_attempt_at = $2 WHERE id = $1", id, due)
	require.NoError(t, err)
	_, err = b.client.Insert(ctx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)

	b.waitStatus(t, ctx, id, "succeeded")
	require.False(t, r.Requests()[0].Received.Round(0).Before(due), "sent before the retry was due")
}

func TestWorkerRecordsTrigger(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
	_, err := b.client.Insert(ctx, delivery.Args{DeliveryID: id, EndpointID: endpoint, Trigger: delivery.TriggerManual}, nil)
	require.NoError(t, err)

	b.waitStatus(t, ctx, id, "succeeded")
	require.Equal(t, "manual", b.attempts(t, ctx, id)[0].Trigger)
}

func TestWorkerAttemptRacingAnEndpointDisable(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		answer     int
		wantStatus string
	}{
		{answer: 500, wantStatus: "cancelled"}, // a failure does not revive a cancelled delivery
		{answer: 200, wantStatus: "succeeded"}, // but a success is what happened
	} {
		t.Run(http.StatusText(tt.answer), func(t *testing.T) {
			t.Parallel()
			b, ctx := setup(t, delivery.Config{Policy: fast})

			var endpoint uuid.UUID
			r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				// The endpoint is disabled while its request is in flight.
				_, err := b.pool.Exec(ctx, "UPDATE herald.endpoints SET enabled = false WHERE id = $1", endpoint)
				if err == nil {
					_, err = b.pool.Exec(ctx, "UPDATE herald.deliveries SET status = 'cancelled' WHERE endpoint_id = $1", endpoint)
				}
				if err != nil {
					t.Error(err)
				}
				w.WriteHeader(tt.answer)
			})
			endpoint = b.endpoint(t, ctx, r.URL)
			id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)

			require.Eventually(t, func() bool { return len(b.attempts(t, ctx, id)) == 1 }, 20*time.Second, 10*time.Millisecond)
			d := b.delivery(t, ctx, id)
			require.Equal(t, tt.wantStatus, d.Status)
			require.Equal(t, 1, d.AttemptCount)
			require.Nil(t, d.NextAttemptAt, "no retry for a cancelled delivery")
			require.Equal(t, 1, r.Count())
		})
	}
}

func TestWorkerCancelsMalformedJobs(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	for _, args := range []delivery.Args{
		{DeliveryID: uuid.New()}, // no endpoint
		{DeliveryID: uuid.New(), EndpointID: uuid.New(), Trigger: "sometimes"},
	} {
		job, err := b.client.Insert(ctx, args, nil)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			row, err := b.client.JobGet(ctx, job.Job.ID)
			require.NoError(t, err)
			return row.State == "cancelled"
		}, 20*time.Second, 20*time.Millisecond, "a job that can never run is cancelled, not retried: %+v", args)
	}
}

// Successes that arrive together are recorded together; each must still be
// recorded exactly once, with its own attempt row, and its endpoint's health
// must hear of it.
func TestWorkerRecordsConcurrentSuccessesOnce(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	var endpoints []uuid.UUID
	for range 3 {
		endpoints = append(endpoints, b.endpoint(t, ctx, webhooktest.NewReceiver(t, webhooktest.Status(200)).URL))
	}
	var ids []uuid.UUID
	for i := range 60 {
		ids = append(ids, b.enqueue(t, ctx, b.message(t, ctx), endpoints[i%len(endpoints)]))
	}
	for _, id := range ids {
		d := b.waitStatus(t, ctx, id, "succeeded")
		require.Equal(t, 1, d.AttemptCount)
		require.Equal(t, 200, *d.LastStatusCode)
		require.NotNil(t, d.CompletedAt)
		attempts := b.attempts(t, ctx, id)
		require.Len(t, attempts, 1, "delivery %s", id)
		require.Equal(t, 1, attempts[0].Number)
		require.Equal(t, "succeeded", attempts[0].Outcome)
		require.Equal(t, *d.FirstAttemptAt, attempts[0].StartedAt)
		require.Equal(t, "msg_", attempts[0].RequestHeaders["webhook-id"][:4], "the request headers are stored")
	}
	for _, id := range endpoints {
		var lastSuccess *time.Time
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT last_success_at FROM herald.endpoints WHERE id = $1", id).Scan(&lastSuccess))
		require.NotNil(t, lastSuccess, "endpoint %s heard of its successes", id)
	}
}
