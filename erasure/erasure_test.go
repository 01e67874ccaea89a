package erasure_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/internal/historyfill"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/migrations"
)

// batchSize is small, so that a few thousand rows take many steps.
const batchSize = 500

type testBundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	jobs   *river.Client[pgx.Tx]
	worker *erasure.Worker
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	jobs, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	return &testBundle{ctx: t.Context(), pool: pool, jobs: jobs, worker: erasure.NewWorker(pool, batchSize, nil)}
}

// filled is a history of two tenants with two endpoints each, loaded with
// historyfill: the first endpoint of each tenant has a replay with records.
type filled struct {
	tenant, otherTenant     string
	endpoint, sameTenant    uuid.UUID
	otherEndpoint, otherTwo uuid.UUID
}

func (b *testBundle) fill(t *testing.T) filled {
	t.Helper()
	_, err := historyfill.Fill(b.ctx, b.pool, historyfill.Spec{Deliveries: 6000, Tenants: 2, EndpointsPerTenant: 2, Span: 3 * 24 * time.Hour})
	require.NoError(t, err)
	rows, err := b.pool.Query(b.ctx, `SELECT tenant_id, id FROM herald.endpoints ORDER BY tenant_id, id`)
	require.NoError(t, err)
	type row struct {
		Tenant string
		ID     uuid.UUID
	}
	eps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	require.NoError(t, err)
	require.Len(t, eps, 4)
	return filled{tenant: eps[0].Tenant, endpoint: eps[0].ID, sameTenant: eps[1].ID,
		otherTenant: eps[2].Tenant, otherEndpoint: eps[2].ID, otherTwo: eps[3].ID}
}

// history counts an endpoint's rows of history (a test may count).
type history struct{ Deliveries, Attempts, ReplayRecords int64 }

func (h history) total() int64 { return h.Deliveries + h.Attempts + h.ReplayRecords }

func (b *testBundle) history(t *testing.T, endpoint uuid.UUID) history {
	t.Helper()
	var h history
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT
  (SELECT count(*) FROM herald.deliveries WHERE endpoint_id = $1),
  (SELECT count(*) FROM herald.attempts WHERE endpoint_id = $1),
  (SELECT count(*) FROM herald.replay_deliveries rd JOIN herald.deliveries d ON d.id = rd.delivery_id WHERE d.endpoint_id = $1)`,
		endpoint).Scan(&h.Deliveries, &h.Attempts, &h.ReplayRecords))
	return h
}

func (b *testBundle) exists(t *testing.T, sql string, args ...any) bool {
	t.Helper()
	var found bool
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT EXISTS (`+sql+`)`, args...).Scan(&found))
	return found
}

func (b *testBundle) get(t *testing.T, id uuid.UUID) erasure.Erasure {
	t.Helper()
	e, err := erasure.Get(b.ctx, b.pool, id)
	require.NoError(t, err)
	return e
}

// run steps the erasure to its end and returns how many steps it took,
// checking that its progress never goes back.
func (b *testBundle) run(t *testing.T, w *erasure.Worker, id uuid.UUID) int {
	t.Helper()
	var last int64
	for steps := 1; ; steps++ {
		more, err := w.Step(b.ctx, id)
		require.NoError(t, err)
		e := b.get(t, id)
		require.GreaterOrEqual(t, e.RowsDeleted, last, "progress only grows")
		last = e.RowsDeleted
		if !more {
			return steps
		}
		require.Equal(t, erasure.StatusRunning, e.Status)
		require.Less(t, steps, 10_000, "the erasure ends")
	}
}

func TestEraseEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fill(t)
	before := b.history(t, f.endpoint)
	require.Greater(t, before.Deliveries, int64(1000))
	require.Positive(t, before.ReplayRecords, "historyfill gave the tenant's first endpoint a replay")
	kept := map[uuid.UUID]history{}
	for _, id := range []uuid.UUID{f.sameTenant, f.otherEndpoint, f.otherTwo} {
		kept[id] = b.history(t, id)
	}
	var messages int64
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM herald.messages`).Scan(&messages))

	e, err := erasure.StartEndpoint(b.ctx, b.pool, b.jobs, f.tenant, f.endpoint)
	require.NoError(t, err)
	require.Equal(t, erasure.StatusRunning, e.Status)
	require.Equal(t, "endpoint", e.Kind())
	require.Equal(t, f.tenant, e.TenantID)
	require.Equal(t, f.endpoint, *e.EndpointID)
	require.Zero(t, e.RowsDeleted)
	require.True(t, b.exists(t, `SELECT FROM herald.endpoints WHERE id = $1 AND deleted_at IS NOT NULL AND NOT enabled`, f.endpoint),
		"marked deleted and disabled at once")
	require.True(t, b.exists(t, `SELECT FROM herald.river_job WHERE kind = $1 AND (args->>'erasure_id')::uuid = $2`, erasure.Kind, e.ID),
		"its job is queued")

	again, err := erasure.StartEndpoint(b.ctx, b.pool, b.jobs, f.tenant, f.endpoint)
	require.NoError(t, err)
	require.Equal(t, e.ID, again.ID, "a second delete returns the same erasure")
	_, err = erasure.StartEndpoint(b.ctx, b.pool, b.jobs, f.otherTenant, f.endpoint)
	require.ErrorIs(t, err, erasure.ErrNotFound, "another tenant's endpoint is not found")
	_, err = erasure.StartEndpoint(b.ctx, b.pool, b.jobs, f.tenant, uuid.New())
	require.ErrorIs(t, err, erasure.ErrNotFound)

	steps := b.run(t, b.worker, e.ID)
	require.Greater(t, steps, int(before.total()/batchSize), "one batch at a time")

	done := b.get(t, e.ID)
	require.Equal(t, erasure.StatusCompleted, done.Status)
	require.NotNil(t, done.CompletedAt)
	require.Equal(t, before.total(), done.RowsDeleted)
	require.Zero(t, b.history(t, f.endpoint).total())
	require.False(t, b.exists(t, `SELECT FROM herald.endpoints WHERE id = $1`, f.endpoint), "the row goes last")
	for id, h := range kept {
		require.Equal(t, h, b.history(t, id), "endpoint %s is untouched", id)
	}
	var after int64
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM herald.messages`).Scan(&after))
	require.Equal(t, messages, after, "the tenant's messages stay: other endpoints received them")

	completed, err := erasure.StartEndpoint(b.ctx, b.pool, b.jobs, f.tenant, f.endpoint)
	require.NoError(t, err)
	require.Equal(t, done, completed, "a delete after the erasure returns it, completed")
}

// A job stopped midway (its process died between batches, or in one)
// resumes with what is left, counting each row once.
func TestEraseResumes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fill(t)
	before := b.history(t, f.endpoint)
	e, err := erasure.StartEndpoint(b.ctx, b.pool, b.jobs, f.tenant, f.endpoint)
	require.NoError(t, err)

	for range 3 {
		more, err := b.worker.Step(b.ctx, e.ID)
		require.NoError(t, err)
		require.True(t, more)
	}
	midway := b.get(t, e.ID)
	require.Equal(t, int64(3*batchSize), midway.RowsDeleted)
	require.Equal(t, before.total()-midway.RowsDeleted, b.history(t, f.endpoint).total())

	killed, cancel := context.WithCancel(b.ctx)
	cancel()
	_, err = b.worker.Step(killed, e.ID)
	require.Error(t, err, "a step cut short fails and commits nothing")
	require.Equal(t, midway.RowsDeleted, b.get(t, e.ID).RowsDeleted)

	// River runs the job again, on another dispatcher.
	job := &river.Job[erasure.Args]{Args: erasure.Args{ErasureID: e.ID}}
	require.NoError(t, erasure.NewWorker(b.pool, batchSize, nil).Work(b.ctx, job))
	done := b.get(t, e.ID)
	require.Equal(t, erasure.StatusCompleted, done.Status)
	require.Equal(t, before.total(), done.RowsDeleted)
	require.Zero(t, b.history(t, f.endpoint).total())
}

// A row of history written after the sweep passed (a fan-out that read the
// endpoint before it was marked) keeps the row from being deleted until
// the next sweep erases it: nothing is left behind.
func TestEraseSweepsStragglers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testfactory.Tenant(t, b.pool, &testfactory.TenantOpts{ID: "acme"})
	endpoint := testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: "acme"})
	message := testfactory.Message(t, b.pool, &testfactory.MessageOpts{TenantID: "acme"})
	testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: message.ID, EndpointID: endpoint.ID})
	e, err := erasure.StartEndpoint(b.ctx, b.pool, b.jobs, "acme", endpoint.ID)
	require.NoError(t, err)

	more, err := b.worker.Step(b.ctx, e.ID)
	require.NoError(t, err)
	require.True(t, more)
	require.Zero(t, b.history(t, endpoint.ID).total())
	late := testfactory.Message(t, b.pool, &testfactory.MessageOpts{TenantID: "acme"})
	testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: late.ID, EndpointID: endpoint.ID})

	more, err = b.worker.Step(b.ctx, e.ID)
	require.NoError(t, err)
	require.True(t, more, "the straggler is swept first")
	b.run(t, b.worker, e.ID)
	require.Zero(t, b.history(t, endpoint.ID).total())
	require.False(t, b.exists(t, `SELECT FROM herald.endpoints WHERE id = $1`, endpoint.ID))
	require.Equal(t, int64(2), b.get(t, e.ID).RowsDeleted)
}

func TestEraseTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fill(t)
	for _, tenant := range []string{f.tenant, f.otherTenant} {
		_, err := b.pool.Exec(b.ctx, `SELECT herald.publish($1, 'invoice.paid', 'inv_1', '{}', 'erase-key')`, tenant)
		require.NoError(t, err)
		_, err = b.pool.Exec(b.ctx, `INSERT INTO herald.api_keys (id, tenant_id, prefix, key_hash) VALUES ($1, $2, 'hk_test', $3)`,
			uuid.New(), tenant, []byte(tenant))
		require.NoError(t, err)
	}
	owned := func(tenant string) map[string]int64 {
		counts := map[string]int64{}
		for table, sql := range map[string]string{
			"messages":                 `SELECT count(*) FROM herald.messages WHERE tenant_id = $1`,
			"deliveries":               `SELECT count(*) FROM herald.deliveries WHERE tenant_id = $1`,
			"attempts":                 `SELECT count(*) FROM herald.attempts a JOIN herald.endpoints e ON e.id = a.endpoint_id WHERE e.tenant_id = $1`,
			"object_versions":          `SELECT count(*) FROM herald.object_versions WHERE tenant_id = $1`,
			"publish_idempotency_keys": `SELECT count(*) FROM herald.publish_idempotency_keys WHERE tenant_id = $1`,
			"idempotency_records":      `SELECT count(*) FROM herald.idempotency_records WHERE tenant_id = $1`,
			"endpoints":                `SELECT count(*) FROM herald.endpoints WHERE tenant_id = $1`,
			"api_keys":                 `SELECT count(*) FROM herald.api_keys WHERE tenant_id = $1`,
			"replay_deliveries":        `SELECT count(*) FROM herald.replay_deliveries rd JOIN herald.replays r ON r.id = rd.replay_id WHERE r.tenant_id = $1`,
		} {
			var n int64
			require.NoError(t, b.pool.QueryRow(b.ctx, sql, tenant).Scan(&n), table)
			counts[table] = n
		}
		return counts
	}
	other := owned(f.otherTenant)
	mine := owned(f.tenant)
	for table, n := range mine {
		require.Positive(t, n, "the tenant has %s", table)
	}

	e, err := erasure.StartTenant(b.ctx, b.pool, b.jobs, f.tenant)
	require.NoError(t, err)
	require.Equal(t, "tenant", e.Kind())
	require.Nil(t, e.EndpointID)
	require.False(t, b.exists(t, `SELECT FROM herald.api_keys WHERE tenant_id = $1`, f.tenant), "its keys are deleted at once")
	require.False(t, b.exists(t, `SELECT FROM herald.endpoints WHERE tenant_id = $1 AND (deleted_at IS NULL OR enabled)`, f.tenant),
		"its endpoints are marked deleted and disabled at once")
	_, err = b.pool.Exec(b.ctx, `SELECT herald.publish($1, 'invoice.paid', 'inv_2', '{}')`, f.tenant)
	require.ErrorContains(t, err, "is being erased; it takes no new messages")
	_, err = b.pool.Exec(b.ctx, `SELECT herald.publish($1, 'invoice.paid', 'inv_2', '{}')`, f.otherTenant)
	require.NoError(t, err, "other tenants publish on")
	other["messages"]++
	other["object_versions"]++

	again, err := erasure.StartTenant(b.ctx, b.pool, b.jobs, f.tenant)
	require.NoError(t, err)
	require.Equal(t, e.ID, again.ID, "a second delete returns the same erasure")

	b.run(t, b.worker, e.ID)
	done := b.get(t, e.ID)
	require.Equal(t, erasure.StatusCompleted, done.Status)
	require.Equal(t, mine["messages"]+mine["deliveries"]+mine["attempts"]+mine["replay_deliveries"]+
		mine["object_versions"]+mine["publish_idempotency_keys"]+mine["idempotency_records"], done.RowsDeleted)
	for table, n := range owned(f.tenant) {
		require.Zero(t, n, "the tenant's %s are gone", table)
	}
	require.False(t, b.exists(t, `SELECT FROM herald.tenants WHERE id = $1`, f.tenant))
	require.Equal(t, other, owned(f.otherTenant), "the other tenant is untouched")

	completed, err := erasure.StartTenant(b.ctx, b.pool, b.jobs, f.tenant)
	require.NoError(t, err)
	require.Equal(t, done, completed, "a delete after the erasure returns it")
	_, err = erasure.StartTenant(b.ctx, b.pool, b.jobs, "nobody")
	require.ErrorIs(t, err, erasure.ErrNotFound)
}

// The retention's drops of whole partition sets go on while an erasure
// deletes from them: each waits for the other's short transaction, neither
// fails, and what a drop took needs no erasing.
func TestEraseBesideRetentionDrops(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fill(t)
	e, err := erasure.StartEndpoint(b.ctx, b.pool, b.jobs, f.tenant, f.endpoint)
	require.NoError(t, err)

	rows, err := b.pool.Query(b.ctx, `SELECT suffix FROM herald.history_partitions ORDER BY upper_at`)
	require.NoError(t, err)
	suffixes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	erased := make(chan error, 1)
	go func() {
		for {
			more, err := b.worker.Step(b.ctx, e.ID)
			if err != nil || !more {
				erased <- err
				return
			}
		}
	}()
	dropped := 0
	for _, suffix := range suffixes {
		var outcome string
		for try := 0; ; try++ {
			// As package retention drops: a lock not granted in 500 ms is
			// tried again at the next pass.
			err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(b.ctx, `SET LOCAL lock_timeout = '500ms'`); err != nil {
					return err
				}
				return tx.QueryRow(b.ctx, `SELECT herald.drop_history_partitions($1, now() + interval '30 days')`, suffix).Scan(&outcome)
			})
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "55P03" && try < 20 {
				continue
			}
			require.NoError(t, err, "drop %s", suffix)
			break
		}
		if outcome == "dropped" {
			dropped++
		}
	}
	require.NoError(t, <-erased)
	require.Positive(t, dropped, "settled sets were dropped meanwhile")
	require.Equal(t, erasure.StatusCompleted, b.get(t, e.ID).Status)
	require.Zero(t, b.history(t, f.endpoint).total())
}
