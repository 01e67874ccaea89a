package delivery_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

// switchableSecrets is a SecretSource that asks whichever store it holds:
// one opened with another HERALD_SECRET_KEY, then the right one.
type switchableSecrets struct {
	store atomic.Pointer[store.Store]
}

func (s *switchableSecrets) ActiveSecrets(ctx context.Context, endpointID uuid.UUID, now time.Time) ([]signing.Secret, error) {
	return s.store.Load().ActiveSecrets(ctx, endpointID, now)
}

// notCharged checks that nothing of an attempt of delivery id to endpoint
// was sent, recorded or charged: the delivery's retry window has not
// started, no attempt row exists, and the endpoint is healthy and enabled
// with no operational event about it.
func (b *steppedBundle) notCharged(t *testing.T, ctx context.Context, id, endpoint uuid.UUID) {
	t.Helper()
	d := b.delivery(t, ctx, id)
	require.Equal(t, "pending", d.Status)
	require.Zero(t, d.AttemptCount, "attempt_count counts the attempts charged to the endpoint")
	require.Nil(t, d.FirstAttemptAt, "the retry window has not started")
	require.Nil(t, d.LastError)
	require.Empty(t, b.attempts(t, ctx, id), "no attempt row: nothing was sent")
	var (
		enabled      bool
		failingSince *time.Time
		events       int
	)
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT enabled, failing_since FROM herald.endpoints WHERE id = $1", endpoint).
		Scan(&enabled, &failingSince))
	require.True(t, enabled, "the endpoint is still enabled")
	require.Nil(t, failingSince, "the endpoint's failing spell has not started")
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.messages WHERE tenant_id = $1", health.DefaultOpsTenant).Scan(&events))
	require.Zero(t, events, "no operational event was published")
}

// A dispatcher started with another HERALD_SECRET_KEY than the one the
// endpoint's secret was sealed with cannot open it, so cannot sign. That is
// Herald's fault: for six days, past the warning (24 h), the retry window
// (1 h here) and the disabling (5 days), nothing is sent and nothing is
// charged; the job comes back within a minute or so each time, and each
// time is counted and logged with its cause. Once the key is right the
// delivery goes out, as its first attempt.
func TestWrongSecretKeyIsNotChargedToTheEndpoint(t *testing.T) {
	t.Parallel()
	secrets := &switchableSecrets{}
	logs := &lockedBuffer{}
	b, ctx := setupStepped(t, delivery.Config{Policy: fast, Secrets: secrets, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	otherKey, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	wrong, err := store.New(b.pool, store.Config{Box: otherKey})
	require.NoError(t, err)
	secrets.store.Store(wrong)

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
	start := b.clock.Now()

	result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	first := result.Job.ScheduledAt.Sub(start)
	require.GreaterOrEqual(t, first, delivery.FirstDeferral/2, "the first deferral")
	require.Less(t, first, delivery.FirstDeferral*3/2, "the first deferral")
	for day := 1; day <= 6; day++ {
		require.Equal(t, river.EventKindJobSnoozed, result.EventKind, "day %d: the job is retried", day)
		require.Less(t, result.Job.ScheduledAt.Sub(b.clock.Now()), delivery.MaxDeferral*3/2, "day %d: retried soon", day)
		b.notCharged(t, ctx, id, endpoint)
		b.clock.Set(start.Add(time.Duration(day) * 24 * time.Hour))
		result, err = b.worker.WorkJob(ctx, t, b.tx, result.Job)
		require.NoError(t, err)
	}
	require.Zero(t, r.Count(), "nothing is sent that could not be signed")
	require.Equal(t, 7.0, faults(t, b.metrics, delivery.FaultSecrets), "every deferral is counted")
	require.Zero(t, faults(t, b.metrics, delivery.FaultSigning))
	var line struct {
		Level, Msg, Cause, Error string
		Delivery, Endpoint       uuid.UUID
	}
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line), "log: %s", logs)
	require.Equal(t, "ERROR", line.Level)
	require.Equal(t, "secrets", line.Cause)
	require.Contains(t, line.Error, "sealed under a different secret key")
	require.Equal(t, id, line.Delivery)
	require.Equal(t, endpoint, line.Endpoint)

	secrets.store.Store(b.store)
	b.clock.Set(result.Job.ScheduledAt)
	result, err = b.worker.WorkJob(ctx, t, b.tx, result.Job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, result.EventKind)
	require.Equal(t, 1, r.Count())
	require.NoError(t, signing.Verifier{Secrets: []signing.Secret{b.secret(t, ctx, endpoint)}, Now: b.clock.Now}.
		Verify(r.Requests()[0].Header, r.Requests()[0].Body))
	d := b.delivery(t, ctx, id)
	require.Equal(t, "succeeded", d.Status)
	require.Equal(t, 1, d.AttemptCount, "the first attempt charged is the one that was sent")
}

// An endpoint without an active secret (a row deleted by hand, a bug) is
// Herald's data, not its owner's: nothing is sent and nothing is charged.
func TestWorkerWithoutSecretSendsNothing(t *testing.T) {
	t.Parallel()
	b, ctx := setupStepped(t, delivery.Config{Policy: once})

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	_, err := b.pool.Exec(ctx, "DELETE FROM herald.endpoint_secrets WHERE endpoint_id = $1", endpoint)
	require.NoError(t, err)
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)

	result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, result.EventKind, "the job is retried")
	b.notCharged(t, ctx, id, endpoint)
	require.Zero(t, r.Count())
	require.Equal(t, 1.0, faults(t, b.metrics, delivery.FaultSecrets))
}

// A batch job stopped by Herald's fault keeps its deliveries: it records
// nothing, hands none off and snoozes; once the fault is repaired it sends
// them all, each as its first attempt.
func TestBatchKeepsItsDeliveriesThroughHeraldsFault(t *testing.T) {
	t.Parallel()
	secrets := &switchableSecrets{}
	b, ctx := setup(t, delivery.Config{Policy: fast, Secrets: secrets})
	otherKey, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	wrong, err := store.New(b.pool, store.Config{Box: otherKey})
	require.NoError(t, err)
	secrets.store.Store(wrong)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)

	ids, job := b.batch(t, ctx, endpoint, 5)
	require.Eventually(t, func() bool {
		row, err := b.client.JobGet(ctx, job)
		require.NoError(t, err)
		var m struct {
			Deferred int `json:"herald_deferred"`
		}
		require.NoError(t, json.Unmarshal(row.Metadata, &m))
		return m.Deferred > 0
	}, 20*time.Second, 20*time.Millisecond, "the batch job was never deferred")
	for _, id := range ids {
		d := b.delivery(t, ctx, id)
		require.Equal(t, "pending", d.Status)
		require.Zero(t, d.AttemptCount)
		require.Nil(t, d.NextAttemptAt, "the delivery is still the batch job's")
		require.Empty(t, b.attempts(t, ctx, id))
	}
	require.Zero(t, b.ownJobs(t, ctx, ids), "nothing was handed off")
	require.Zero(t, r.Count())

	secrets.store.Store(b.store)
	b.waitJob(t, ctx, job, rivertype.JobStateCompleted)
	for _, id := range ids {
		d := b.delivery(t, ctx, id)
		require.Equal(t, "succeeded", d.Status)
		require.Equal(t, 1, d.AttemptCount)
	}
	require.Equal(t, len(ids), r.Count())
	require.Zero(t, b.ownJobs(t, ctx, ids))
}
