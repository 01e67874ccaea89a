package dispatcher

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/store"
)

// A fan-out batch's deliveries go in one batch job per endpoint, in the
// order the endpoints first appear and taking them in turn, at most
// delivery.MaxBatch per job; a lone delivery gets a job of its own.
func TestJobGroupsBatchDeliveriesByEndpoint(t *testing.T) {
	busy, quiet := uuid.New(), uuid.New()
	var g jobGroups
	var busyIDs []uuid.UUID
	for i := range delivery.MaxBatch + 2 {
		id := uuid.New()
		busyIDs = append(busyIDs, id)
		g.add("acme", busy, id)
		if i == 0 {
			g.add("acme", quiet, uuid.New())
		}
	}

	jobs := g.jobs(nil)
	require.Len(t, jobs, 3)
	first, ok := jobs[0].Args.(delivery.BatchArgs)
	require.True(t, ok, "job 1 is %T", jobs[0].Args)
	require.Equal(t, busy, first.EndpointID)
	require.Equal(t, busyIDs[:delivery.MaxBatch], first.DeliveryIDs)
	lone, ok := jobs[1].Args.(delivery.Args)
	require.True(t, ok, "job 2 is %T", jobs[1].Args)
	require.Equal(t, quiet, lone.EndpointID)
	require.Equal(t, delivery.TriggerScheduled, lone.Trigger)
	require.True(t, lone.Alone, "a new delivery's first job need not look for an earlier one")
	second, ok := jobs[2].Args.(delivery.BatchArgs)
	require.True(t, ok, "job 3 is %T", jobs[2].Args)
	require.Equal(t, busyIDs[delivery.MaxBatch:], second.DeliveryIDs)
}

// A tenant with more than twice the others' average of a fan-out's new
// deliveries floods it: its jobs get FloodPriority, fetched after the
// others'. Tenants alike, or one alone, flood nothing.
func TestJobGroupsLowerAFloodingTenant(t *testing.T) {
	t.Parallel()
	var g jobGroups
	for range 20 {
		g.add("noisy", uuid.New(), uuid.New())
	}
	quiet := map[uuid.UUID]bool{}
	for _, tenant := range []string{"a", "b", "c"} {
		e := uuid.New()
		quiet[e] = true
		g.add(tenant, e, uuid.New())
	}
	for _, job := range g.jobs(nil) {
		args := job.Args.(delivery.Args)
		if quiet[args.EndpointID] {
			require.Nil(t, job.InsertOpts, "a quiet tenant's job keeps the default priority")
			continue
		}
		require.Equal(t, FloodPriority, job.InsertOpts.Priority, "the flooding tenant's job waits behind")
	}

	var even jobGroups
	for _, tenant := range []string{"a", "b", "a", "b", "c"} {
		even.add(tenant, uuid.New(), uuid.New())
	}
	for _, job := range even.jobs(nil) {
		require.Nil(t, job.InsertOpts, "no tenant floods an even fan-out")
	}
	var alone jobGroups
	for range 20 {
		alone.add("solo", uuid.New(), uuid.New())
	}
	for _, job := range alone.jobs(nil) {
		require.Nil(t, job.InsertOpts, "a tenant alone floods nothing")
	}
	var wide jobGroups
	for range FloodDeliveries {
		wide.add("solo", uuid.New(), uuid.New())
	}
	for _, job := range wide.jobs(nil) {
		require.Equal(t, FloodPriority, job.InsertOpts.Priority, "alone, a fan-out of FloodDeliveries floods the messages others publish next")
	}
}

// A flooding tenant's jobs to its endpoints that answer keep the default
// priority, unless those alone flood: on the old code the healthy endpoint
// of a tenant flooding 500 endpoints that hang queued behind its own
// flood's jobs (noisy-tenant-shared: 20 s behind all through the run).
func TestJobGroupsKeepAFloodingTenantsAnsweringEndpointAhead(t *testing.T) {
	t.Parallel()
	var g jobGroups
	for range 500 {
		g.add("noisy", uuid.New(), uuid.New())
	}
	healthy := uuid.New()
	g.add("noisy", healthy, uuid.New())
	g.add("quiet", uuid.New(), uuid.New())
	answering := func(e uuid.UUID) bool { return e == healthy }
	lowered := 0
	for _, job := range g.jobs(answering) {
		args := job.Args.(delivery.Args)
		if args.EndpointID == healthy {
			require.Nil(t, job.InsertOpts, "the flooding tenant's answering endpoint keeps the default priority")
			continue
		}
		if job.InsertOpts != nil && job.InsertOpts.Priority == FloodPriority {
			lowered++
		}
	}
	require.Equal(t, 500, lowered, "the flood to endpoints that do not answer waits behind")

	// A few deliveries more than the others' average are chance, not a
	// flood: on the old code these three went behind the flood.
	var drawn jobGroups
	for range 500 {
		drawn.add("noisy", uuid.New(), uuid.New())
	}
	for range 3 {
		drawn.add("noisy", healthy, uuid.New())
	}
	for _, tenant := range []string{"a", "b", "c", "d", "e"} {
		drawn.add(tenant, uuid.New(), uuid.New())
	}
	for _, job := range drawn.jobs(answering) {
		if args, ok := job.Args.(delivery.BatchArgs); ok && args.EndpointID == healthy {
			require.Nil(t, job.InsertOpts, "three deliveries to an answering endpoint flood nothing")
		}
	}

	var burst jobGroups
	for range 20 {
		burst.add("bursting", uuid.New(), uuid.New())
	}
	burst.add("quiet", uuid.New(), uuid.New())
	for _, job := range burst.jobs(func(uuid.UUID) bool { return true }) {
		args := job.Args.(delivery.Args)
		if burst.tenant[args.EndpointID] == "bursting" {
			require.Equal(t, FloodPriority, job.InsertOpts.Priority, "a flood to endpoints that answer still waits behind")
		}
	}
}

// The claim takes the tenants with a backlog in turn: a tenant that
// published 30 messages first does not keep another's single message out
// of a claim of 10, and each tenant's messages keep their order. The claim
// says more wait while the flooding tenant has some left.
func TestClaimTakesTenantsInTurn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	for _, id := range []string{"noisy", "quiet"} {
		_, err := pool.Exec(ctx, `INSERT INTO herald.tenants (id) VALUES ($1)`, id)
		require.NoError(t, err)
	}
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	empty, err := claim(ctx, tx, 10, WideFanOutLimit, newFilterCache(slog.New(slog.DiscardHandler)))
	require.NoError(t, err, "an empty outbox is no error")
	require.Zero(t, empty.messages)
	require.False(t, empty.more)
	require.NoError(t, tx.Rollback(ctx))

	publish := func(tenant string) uuid.UUID {
		p, err := outbox.PublishPool(ctx, pool, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_" + uuid.NewString(), Data: map[string]any{}})
		require.NoError(t, err)
		return p.ID
	}
	var flood []uuid.UUID
	for range 30 {
		flood = append(flood, publish("noisy"))
	}
	quiet := publish("quiet")

	claimOnce := func() ([]uuid.UUID, bool) {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		b, err := claim(ctx, tx, 10, WideFanOutLimit, newFilterCache(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		rows, err := pool.Query(ctx, `SELECT id FROM herald.messages WHERE dispatched_at IS NOT NULL ORDER BY id`)
		require.NoError(t, err)
		dispatched, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		require.NoError(t, err)
		return dispatched, b.more
	}
	dispatched, more := claimOnce()
	require.Contains(t, dispatched, quiet, "the quiet tenant's message is in the first claim")
	require.Len(t, dispatched, 6, "each of the two tenants has a share of 5; the quiet one had 1")
	require.Equal(t, flood[:5], slices.DeleteFunc(slices.Clone(dispatched), func(id uuid.UUID) bool { return id == quiet }),
		"the flooding tenant's oldest go first")
	require.True(t, more, "the flooding tenant has more")

	for more {
		dispatched, more = claimOnce()
	}
	require.Len(t, dispatched, 31, "claiming again takes the rest")
}

// noisyAndQuiet returns a database with the tenants "noisy" and "quiet",
// and a store on it.
func noisyAndQuiet(t *testing.T) (*pgxpool.Pool, *store.Store) {
	t.Helper()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box})
	require.NoError(t, err)
	for _, id := range []string{"noisy", "quiet"} {
		_, err := st.CreateTenant(t.Context(), store.NewTenant{ID: id})
		require.NoError(t, err)
	}
	return pool, st
}

// A tenant with many endpoints takes its share of a claim in deliveries:
// beside a quiet tenant, a flood to 40 endpoints gets one message of a
// claim counting 50 deliveries, not half the claim's messages, so the
// transaction that carries the quiet tenant's message stays short (issue
// 18's noisy tenant: 24 messages to 500 endpoints each had made 12,000
// deliveries in every fan-out transaction).
func TestClaimCountsAWideTenantsShareInDeliveries(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, st := noisyAndQuiet(t)
	for i := range 40 {
		_, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "noisy", URL: fmt.Sprintf("https://example.com/noisy/%d", i)})
		require.NoError(t, err)
	}
	_, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "quiet", URL: "https://example.com/quiet"})
	require.NoError(t, err)
	for n := range 10 {
		_, err := outbox.PublishPool(ctx, pool, outbox.Message{Tenant: "noisy", Type: "invoice.paid", ObjectID: fmt.Sprint("inv_", n), Data: map[string]any{}})
		require.NoError(t, err)
	}
	quiet, err := outbox.PublishPool(ctx, pool, outbox.Message{Tenant: "quiet", Type: "invoice.paid", ObjectID: "inv_q", Data: map[string]any{}})
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	b, err := claim(ctx, tx, 10, 50, newFilterCache(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.Equal(t, 2, b.messages, "the quiet message and one of the flood's: 25 deliveries each is the share, and a tenant takes at least one message")
	require.Len(t, b.deliveries, 41)
	require.True(t, b.more)
	require.True(t, slices.ContainsFunc(b.deliveries, func(d newDelivery) bool { return d.messageID == quiet.ID }), "the quiet tenant's message is in the claim")

	// Alone, it takes as many messages as fit: 120 deliveries' worth.
	b, err = claim(ctx, tx, 10, 120, newFilterCache(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.Equal(t, 3, b.messages)
}

// Claiming in turn keeps the channels and filters: the body comes on each
// message's first row whichever tenant's turn it is in, so a filter meets
// every message of a claim that mixes a flood with another tenant's
// message, and an endpoint of other channels gets none of them.
func TestClaimInTurnFiltersEachTenantsMessages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, st := noisyAndQuiet(t)
	endpoint := func(tenant, filter string, channels ...string) uuid.UUID {
		e, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: "https://example.com/" + tenant, Filter: filter, Channels: channels})
		require.NoError(t, err)
		return e.ID
	}
	late := endpoint("noisy", `data.n >= 3`)
	noisyAll := endpoint("noisy", "")
	big := endpoint("quiet", `data.amount >= 100`)
	endpoint("quiet", `data.amount < 100`)
	endpoint("quiet", "", "eu")

	var flood []uuid.UUID
	for n := range 8 {
		p, err := outbox.PublishPool(ctx, pool, outbox.Message{Tenant: "noisy", Type: "invoice.paid", ObjectID: fmt.Sprint("inv_", n), Data: map[string]any{"n": n}})
		require.NoError(t, err)
		flood = append(flood, p.ID)
	}
	quiet, err := outbox.PublishPool(ctx, pool, outbox.Message{Tenant: "quiet", Type: "invoice.paid", ObjectID: "inv_q", Data: map[string]any{"amount": 150}, Channels: []string{"us"}})
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	b, err := claim(ctx, tx, 8, WideFanOutLimit, newFilterCache(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.Equal(t, 5, b.messages, "each tenant's share is 4; the quiet one had 1")
	require.True(t, b.more)
	got := map[[2]uuid.UUID]bool{}
	for _, d := range b.deliveries {
		got[[2]uuid.UUID{d.messageID, d.endpointID}] = true
	}
	want := map[[2]uuid.UUID]bool{{quiet.ID, big}: true, {flood[3], late}: true}
	for _, m := range flood[:4] {
		want[[2]uuid.UUID{m, noisyAll}] = true
	}
	require.Equal(t, want, got, "small's filter and eu's channel refuse the quiet message; late takes the fourth of the flood only")
}

// A wide transaction holding other tenants' messages commits at
// SharedWideFanOutLimit, since they wait for its commit; one tenant's wide
// backlog alone fills WideFanOutLimit; narrow messages fill FanOutLimit.
func TestWideFanOutCommitsSoonerWhenShared(t *testing.T) {
	t.Parallel()
	require.True(t, wideEnough(SharedWideFanOutLimit, 21, 21), "one noisy message beside 20 tenants' commits")
	require.False(t, wideEnough(SharedWideFanOutLimit, 5, 1), "one tenant's wide backlog goes on claiming")
	require.True(t, wideEnough(WideFanOutLimit, 20, 1))
	require.False(t, wideEnough(SharedWideFanOutLimit, SharedWideFanOutLimit, 5), "narrow messages are not wide")
}
