package limits_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testclock"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/limits"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

type testBundle struct {
	pool  *pgxpool.Pool
	clock *testclock.Clock
	cfg   limits.Config
}

// setup gives a test its database with tenants acme and globex, and a
// config of slow limits (one publish every 10 s, bursts of 4) on a clock
// the test steps.
func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{pool: pgtest.NewPool(t), clock: testclock.New(t0)}
	testfactory.Tenant(t, b.pool, &testfactory.TenantOpts{ID: "acme"})
	testfactory.Tenant(t, b.pool, &testfactory.TenantOpts{ID: "globex"})
	b.cfg = limits.Config{Rates: map[limits.Action]limits.Rate{limits.Publish: {PerSecond: 0.1, Burst: 4}}, Now: b.clock.Now}
	return b
}

// replica is another api process's limiter on the bundle's database.
func (b *testBundle) replica(t *testing.T) *limits.Limiter {
	t.Helper()
	l, err := limits.New(b.pool, b.cfg)
	require.NoError(t, err)
	return l
}

func take(t *testing.T, l *limits.Limiter, tenant string, credential uuid.UUID) *limits.Refusal {
	t.Helper()
	refusal, err := l.Take(context.Background(), tenant, credential, limits.Publish)
	require.NoError(t, err)
	return refusal
}

// A tenant spends its burst of 4, and the fifth request is told to wait
// exactly one interval (10 s); after that wait it goes through. Another
// tenant is not affected.
func TestTakeTenantBurstThenWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.replica(t)
	for i := range 4 {
		require.Nil(t, take(t, l, "acme", uuid.Nil), "request %d of the burst", i+1)
	}
	refusal := take(t, l, "acme", uuid.Nil)
	require.NotNil(t, refusal)
	require.Equal(t, limits.ScopeTenant, refusal.Scope)
	require.Equal(t, limits.Rate{PerSecond: 0.1, Burst: 4}, refusal.Rate)
	require.Equal(t, 10*time.Second, refusal.Wait)
	require.Nil(t, take(t, l, "globex", uuid.Nil), "another tenant has its own limit")

	b.clock.Set(t0.Add(9 * time.Second))
	require.Equal(t, time.Second, take(t, l, "acme", uuid.Nil).Wait, "a refused request changes nothing")
	b.clock.Set(t0.Add(10 * time.Second))
	require.Nil(t, take(t, l, "acme", uuid.Nil), "after the wait it goes through")
	require.NotNil(t, take(t, l, "acme", uuid.Nil))
}

// Two api replicas share a tenant's limit: requests spread over both
// spend one burst.
func TestTakeTenantLimitIsSharedByReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one, two := b.replica(t), b.replica(t)
	require.Nil(t, take(t, one, "acme", uuid.Nil))
	require.Nil(t, take(t, two, "acme", uuid.Nil))
	require.Nil(t, take(t, one, "acme", uuid.Nil))
	require.Nil(t, take(t, two, "acme", uuid.Nil))
	require.NotNil(t, take(t, one, "acme", uuid.Nil))
	require.NotNil(t, take(t, two, "acme", uuid.Nil))
}

// A credential may use half its tenant's burst (2 of 4): the first key is
// turned away by its own limit while a second key of the tenant still
// gets the rest, and a key turned away by its tenant keeps its token.
func TestTakeCredentialShare(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.replica(t)
	keyA, keyB, keyC := uuid.New(), uuid.New(), uuid.New()
	require.Nil(t, take(t, l, "acme", keyA))
	require.Nil(t, take(t, l, "acme", keyA))
	refusal := take(t, l, "acme", keyA)
	require.NotNil(t, refusal)
	require.Equal(t, limits.ScopeCredential, refusal.Scope)
	require.Equal(t, limits.Rate{PerSecond: 0.05, Burst: 2}, refusal.Rate)
	require.Equal(t, 20*time.Second, refusal.Wait)

	require.Nil(t, take(t, l, "acme", keyB))
	require.Nil(t, take(t, l, "acme", keyB))
	refusal = take(t, l, "acme", keyC)
	require.NotNil(t, refusal, "the tenant's burst is spent")
	require.Equal(t, limits.ScopeTenant, refusal.Scope)

	b.clock.Set(t0.Add(10 * time.Second))
	require.Nil(t, take(t, l, "acme", keyC), "keyC's earlier token was given back, so it still has two")
	b.clock.Set(t0.Add(20 * time.Second))
	require.Nil(t, take(t, l, "acme", keyC))
}

// A tenant's own limit, set by an operator in herald.tenants.rate_limits,
// applies to the next request, and moves its credentials' share with it.
func TestTakeTenantOverride(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.replica(t)
	key := uuid.New()
	require.Nil(t, take(t, l, "acme", key))
	_, err := b.pool.Exec(context.Background(), `UPDATE herald.tenants SET rate_limits = '{"publish": {"per_second": 1, "burst": 20}}' WHERE id = 'acme'`)
	require.NoError(t, err)
	for i := range 10 {
		require.Nil(t, take(t, l, "acme", key), "request %d within the new share of 10", i+2)
	}
	refusal := take(t, l, "acme", key)
	require.NotNil(t, refusal)
	require.Equal(t, limits.Rate{PerSecond: 0.5, Burst: 10}, refusal.Rate)
	require.Equal(t, 2*time.Second, refusal.Wait)
}

// A default of no limit asks nothing of a tenant without an override, and
// New refuses settings out of range.
func TestTakeUnlimitedAndBadConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Rates[limits.Publish] = limits.Rate{PerSecond: -1}
	l := b.replica(t)
	for range 20 {
		require.Nil(t, take(t, l, "acme", uuid.New()))
	}
	rate, ok := l.Default(limits.Publish)
	require.False(t, ok, "no default limit: %v", rate)

	_, err := limits.New(b.pool, limits.Config{CredentialShare: 2})
	require.ErrorContains(t, err, "CredentialShare is 2")
	_, err = limits.New(b.pool, limits.Config{Rates: map[limits.Action]limits.Rate{limits.Replay: {PerSecond: 1, Burst: -3}}})
	require.ErrorContains(t, err, "the default replay limit's burst is -3")
}
