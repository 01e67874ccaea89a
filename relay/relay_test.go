package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

func invoice(i int) outbox.Message {
	return outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: fmt.Sprintf("inv_%d", i%3), Data: map[string]any{"n": i}}
}

// publish commits msgs on the producer's database with outbox.PublishMany
// in one transaction of the producer's.
func (b *testBundle) publish(t *testing.T, ctx context.Context, msgs ...outbox.Message) []outbox.Published {
	t.Helper()
	tx, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	p, err := outbox.PublishMany(ctx, tx, msgs)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	return p
}

// receivedOnce checks that rec got each message's webhook-id exactly once.
func receivedOnce(t *testing.T, rec *webhooktest.Receiver, ids []uuid.UUID) {
	t.Helper()
	got := map[string]int{}
	for _, r := range rec.Requests() {
		got[r.Header.Get(signing.HeaderID)]++
	}
	for _, id := range ids {
		require.Equal(t, 1, got[delivery.MessageHeaderID(id)], "message %s must be delivered exactly once", id)
	}
	require.Len(t, got, len(ids), "no other message may be delivered")
}

// A producer's events go from its own database through the relay and a
// real dispatcher to a receiver on loopback, each once, with its object's
// version, and the producer's database is left with relayed rows only.
func TestRelayDeliversEndToEnd(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	rec := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	_, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: rec.URL})
	require.NoError(t, err)
	b.startDispatcher(t)
	run(t, b.newRelay(t, nil))

	var ids []uuid.UUID
	for i := range 4 {
		batch := make([]outbox.Message, 5)
		for j := range batch {
			batch[j] = invoice(i*5 + j)
		}
		for _, p := range b.publish(t, ctx, batch...) {
			ids = append(ids, p.ID)
		}
	}
	// A plain-SQL producer publishes the same way.
	var sqlID uuid.UUID
	require.NoError(t, b.producer.QueryRow(ctx, `SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_sql', '{"n": 99}')`).Scan(&sqlID))
	ids = append(ids, sqlID)

	eventually(t, 30*time.Second, "every relayed message delivered", func() bool {
		return count(t, b.herald, "SELECT count(*) FROM herald.deliveries WHERE status = 'succeeded'") == len(ids)
	})
	receivedOnce(t, rec, ids)
	require.Equal(t, len(ids), count(t, b.herald, "SELECT count(*) FROM herald.messages WHERE source = $1", source))
	require.Equal(t, 7, count(t, b.herald, "SELECT max(object_version) FROM herald.messages WHERE object_id = 'inv_0'"),
		"inv_0 took 7 of the 21 versions; the producer's versions travel unchanged")
	eventually(t, 10*time.Second, "the producer's rows marked relayed", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL") == 0
	})
}

// The producer's database holds the outbox and nothing else: no
// deliveries, attempts or River tables, before or after a delivery.
func TestProducerDatabaseHoldsOnlyTheOutbox(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	rec := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	_, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: rec.URL})
	require.NoError(t, err)
	b.startDispatcher(t)
	run(t, b.newRelay(t, nil))
	b.publish(t, ctx, invoice(1))
	eventually(t, 30*time.Second, "the message delivered", func() bool { return rec.Count() == 1 })

	rows, err := b.producer.Query(ctx, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
ORDER BY 1`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"herald.object_versions", "herald.outbox", "herald.outbox_wakeups", "herald.producer_schema_migrations", "herald.publish_idempotency_keys"}, tables)
}

// Nothing of a producer's transaction that rolls back reaches Herald, nor
// takes a version; the commit beside it does.
func TestRolledBackPublishRelaysNothing(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	tx, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	_, err = outbox.Publish(ctx, tx, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}})
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	committed := b.publish(t, ctx, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}})

	run(t, b.newRelay(t, nil))
	eventually(t, 10*time.Second, "the committed message relayed", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NOT NULL") == 1
	})
	require.Equal(t, 1, count(t, b.herald, "SELECT count(*) FROM herald.messages"))
	require.Equal(t, 1, count(t, b.herald, "SELECT count(*) FROM herald.messages WHERE id = $1 AND object_version = 1", committed[0].ID))
}

var errStopped = errors.New("relay stopped between the commits")

// A relay that stops after Herald's commit and before the source's mark
// (a crash there) leaves the batch unmarked; the next relay claims it
// again and inserts nothing twice, and every message is delivered once.
func TestRelayStoppedBetweenCommitsReRelaysWithoutDuplicates(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	var msgs []outbox.Message
	for i := range 30 {
		msgs = append(msgs, invoice(i))
	}
	var ids []uuid.UUID
	for _, p := range b.publish(t, ctx, msgs...) {
		ids = append(ids, p.ID)
	}

	var hooked atomic.Int32
	crashing := b.newRelay(t, func(cfg *relay.Config) {
		cfg.BatchSize = 10
		relay.SetAfterHeraldCommit(cfg, func(string, []uuid.UUID) error {
			hooked.Add(1)
			return errStopped
		})
	})
	stop := run(t, crashing)
	eventually(t, 10*time.Second, "a step stopped between the commits", func() bool { return hooked.Load() > 0 })
	stop()
	// The next step may have claimed and committed another batch while the
	// first's mark was being abandoned (the mark commits in the
	// background); its mark stopped too.
	inHerald := count(t, b.herald, "SELECT count(*) FROM herald.messages")
	require.GreaterOrEqual(t, inHerald, 10, "Herald committed the first batch")
	require.Equal(t, len(ids), count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL"), "the source marked none of it")

	rec := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	_, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: rec.URL})
	require.NoError(t, err)
	b.startDispatcher(t)
	run(t, b.newRelay(t, func(cfg *relay.Config) { cfg.BatchSize = 10 }))
	eventually(t, 30*time.Second, "every message delivered", func() bool {
		return count(t, b.herald, "SELECT count(*) FROM herald.deliveries WHERE status = 'succeeded'") == len(ids)
	})
	require.Equal(t, len(ids), count(t, b.herald, "SELECT count(*) FROM herald.messages"), "no message twice in Herald")
	receivedOnce(t, rec, ids)
	eventually(t, 10*time.Second, "the source marked every message", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL") == 0
	})
}

// An idempotency key is claimed on the producer's database in split mode:
// its reuse returns the first message and version, publishes nothing and
// bumps no version, also after the first message was relayed and deleted
// from the source by its retention.
func TestIdempotencyKeyReuseInSplitMode(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	keyed := outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}, IdempotencyKey: "order-7"}
	first := b.publish(t, ctx, keyed)[0]
	again := b.publish(t, ctx, keyed)[0]
	require.True(t, again.Duplicate)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, first.Version, again.Version)

	r := b.newRelay(t, func(cfg *relay.Config) { cfg.RelayedGrace = time.Millisecond })
	stop := run(t, r)
	eventually(t, 10*time.Second, "the message relayed and marked", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL") == 0
	})
	stop()
	time.Sleep(10 * time.Millisecond) // past the grace
	require.NoError(t, r.Prune(ctx, source))
	require.Equal(t, 0, count(t, b.producer, "SELECT count(*) FROM herald.outbox"), "the relayed row is gone after the grace")

	late := b.publish(t, ctx, keyed)[0]
	require.True(t, late.Duplicate, "the key outlives its message on the source")
	require.Equal(t, first.ID, late.ID)
	require.Equal(t, 1, count(t, b.producer, "SELECT version FROM herald.object_versions WHERE object_id = 'inv_1'"), "object versions stay")
	require.Equal(t, 1, count(t, b.herald, "SELECT count(*) FROM herald.messages"))
	require.Equal(t, 0, count(t, b.producer, "SELECT count(*) FROM herald.outbox"), "a duplicate publishes nothing")
}

// Source retention deletes relayed rows past the grace and keys past
// Herald's retention, and keeps what waits, what was refused and every
// object's version.
func TestSourceRetentionKeepsWhatWaitsAndVersions(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.publish(t, ctx, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}, IdempotencyKey: "k1"})
	waiting := b.publish(t, ctx, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_2", Data: map[string]any{}})[0]
	_, err := b.producer.Exec(ctx, `UPDATE herald.outbox SET relayed_at = now() - interval '1 hour' WHERE object_id = 'inv_1';
UPDATE herald.publish_idempotency_keys SET created_at = now() - interval '31 days'`)
	require.NoError(t, err)

	r := b.newRelay(t, nil) // the default grace, 10 minutes; Herald's retention, 30 days
	require.NoError(t, r.Prune(ctx, source))
	require.Equal(t, 1, count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE id = $1", waiting.ID), "a waiting message stays")
	require.Equal(t, 1, count(t, b.producer, "SELECT count(*) FROM herald.outbox"), "the row relayed an hour ago is gone")
	require.Equal(t, 0, count(t, b.producer, "SELECT count(*) FROM herald.publish_idempotency_keys"), "the key past Herald's retention is gone")
	require.Equal(t, 2, count(t, b.producer, "SELECT count(*) FROM herald.object_versions"), "versions stay")
}

// A message for a tenant Herald does not have is refused: it stays on the
// source with why, is not claimed again, and does not hold up the
// messages beside it.
func TestRelayRefusesUnknownTenant(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	tx, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	ghost, err := outbox.Publish(ctx, tx, outbox.Message{Tenant: "ghost", Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}})
	require.NoError(t, err, "the producer's database cannot know Herald's tenants")
	require.NoError(t, tx.Commit(ctx))
	good := b.publish(t, ctx, invoice(1))[0]

	run(t, b.newRelay(t, nil))
	eventually(t, 10*time.Second, "the good message relayed", func() bool {
		return count(t, b.herald, "SELECT count(*) FROM herald.messages WHERE id = $1", good.ID) == 1
	})
	eventually(t, 10*time.Second, "the ghost's message refused", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE refused IS NOT NULL") == 1
	})
	var refused string
	require.NoError(t, b.producer.QueryRow(ctx, "SELECT refused FROM herald.outbox WHERE id = $1", ghost.ID).Scan(&refused))
	require.Contains(t, refused, `tenant "ghost" does not exist in Herald`)
	require.Equal(t, 1, count(t, b.herald, "SELECT count(*) FROM herald.messages"))
}

func TestNewRefusesBadSources(t *testing.T) {
	t.Parallel()
	b, _ := setup(t)
	for name, tc := range map[string]struct {
		sources []relay.Source
		want    string
	}{
		"none":     {nil, "Config.Sources is empty"},
		"bad name": {[]relay.Source{{Name: "Billing", Pool: b.source}}, `source name "Billing" is not valid`},
		"twice":    {[]relay.Source{{Name: "a", Pool: b.source}, {Name: "a", Pool: b.source}}, "two sources are named a"},
		"no pool":  {[]relay.Source{{Name: "a"}}, "source a has no pool"},
		"statements prepared once": {[]relay.Source{{Name: "a", Pool: b.producer}},
			"source a's pool prepares each statement once (cache_statement, pgx's default), so Postgres may keep a plan made while the outbox was small; open it with default_query_exec_mode=cache_describe"},
	} {
		_, err := relay.New(relay.Config{Pool: b.herald, Sources: tc.sources})
		require.ErrorContains(t, err, tc.want, name)
	}
}

func TestParseSourceURL(t *testing.T) {
	t.Parallel()
	got, err := relay.ParseSourceURL("billing=postgres://u:pw@127.0.0.1:5432/billing?sslmode=disable")
	require.NoError(t, err)
	require.Equal(t, relay.SourceURL{Name: "billing", URL: "postgres://u:pw@127.0.0.1:5432/billing?sslmode=disable"}, got)
	got, err = relay.ParseSourceURL("orders=host=127.0.0.1")
	require.NoError(t, err)
	require.Equal(t, relay.SourceURL{Name: "orders", URL: "host=127.0.0.1"}, got)

	for value, want := range map[string]string{
		"postgres://u:pw@h/db":             "has no name before",
		"postgres://u:pw@h/db?sslmode=off": "has no name before",
		"billing=":                         "source billing has no URL",
		"Billing=postgres://h/db":          `source name "Billing" is not valid`,
		"billing=postgres://u:pw@h:99999/": "source billing: database URL is not a valid Postgres URL",
	} {
		_, err := relay.ParseSourceURL(value)
		require.ErrorContains(t, err, want, value)
		require.NotContains(t, err.Error(), "pw", "an error never repeats the password")
	}
}

// An object's versions reach Herald in version order even when a later
// version has the lower id (ids are made before a publish waits for its
// object's lock) and the batch boundary falls between them: the later
// version goes with the earlier one, or after it.
func TestRelayKeepsEachObjectsVersionsInOrder(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	p := b.publish(t, ctx, invoice(0), invoice(3)) // inv_0, versions 1 and 2
	// Swap their ids: version 2 now sorts first.
	_, err := b.producer.Exec(ctx, `UPDATE herald.outbox SET id = CASE WHEN id = $1 THEN $4::uuid ELSE $3::uuid END WHERE id IN ($1, $2)`,
		p[0].ID, p[1].ID, uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()))
	require.NoError(t, err)
	var versionOrder []int
	var mu sync.Mutex
	r := b.newRelay(t, func(cfg *relay.Config) {
		cfg.BatchSize = 1
		relay.SetAfterHeraldCommit(cfg, func(_ string, ids []uuid.UUID) error {
			mu.Lock()
			defer mu.Unlock()
			// One commit's versions arrive together: in order among themselves.
			var committed []int
			for _, id := range ids {
				committed = append(committed, count(t, b.herald, "SELECT object_version FROM herald.messages WHERE id = $1", id))
			}
			slices.Sort(committed)
			versionOrder = append(versionOrder, committed...)
			return nil
		})
	})
	run(t, r)
	eventually(t, 10*time.Second, "both versions relayed", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL") == 0
	})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, 2}, versionOrder)
}

// A step's mark on the source commits in the background: while it waits,
// the next step claims and relays the next batch without taking the
// marking one again (it is still locked), and a later version of an
// object whose lower version the waiting mark holds is not held back
// (Herald has that one). A mark abandoned there (a crash) leaves both
// batches unmarked, and the next relay inserts nothing twice.
func TestNextStepRelaysWhileTheMarkCommits(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	first := b.publish(t, ctx, invoice(0))  // inv_0 version 1
	second := b.publish(t, ctx, invoice(3)) // inv_0 version 2
	ids := []uuid.UUID{first[0].ID, second[0].ID}

	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	var marks atomic.Int32
	crashing := b.newRelay(t, func(cfg *relay.Config) {
		cfg.BatchSize = 1
		relay.SetAfterHeraldCommit(cfg, func(string, []uuid.UUID) error {
			marks.Add(1)
			<-release
			return errStopped
		})
	})
	stop := run(t, crashing)
	t.Cleanup(releaseOnce) // runs before stop, which waits for the mark
	eventually(t, 10*time.Second, "version 2 relayed while version 1's mark waits", func() bool {
		return count(t, b.herald, "SELECT count(*) FROM herald.messages") == 2
	})
	require.Equal(t, int32(1), marks.Load(), "the second step waits for the first mark before it hands over its own")
	releaseOnce()
	stop()
	require.Equal(t, 2, count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL"), "the source marked none of it")

	rec := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	_, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: rec.URL})
	require.NoError(t, err)
	b.startDispatcher(t)
	run(t, b.newRelay(t, nil))
	eventually(t, 30*time.Second, "both messages delivered", func() bool {
		return count(t, b.herald, "SELECT count(*) FROM herald.deliveries WHERE status = 'succeeded'") == len(ids)
	})
	require.Equal(t, len(ids), count(t, b.herald, "SELECT count(*) FROM herald.messages"), "no message twice in Herald")
	receivedOnce(t, rec, ids)
	eventually(t, 10*time.Second, "the source marked every message", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL") == 0
	})
}

// Two relays on one source, their marks committing in the background
// while publishes of the same objects race (a later version may get the
// lower id), relay every message once, and each version only after every
// lower version of its object: when a batch's mark starts, Herald has
// all of them.
func TestTwoRelaysKeepEachObjectsVersionsInOrder(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	var (
		mu         sync.Mutex
		outOfOrder []string
	)
	check := func(_ string, ids []uuid.UUID) error {
		for _, id := range ids {
			var object string
			var version, lower int
			require.NoError(t, b.herald.QueryRow(ctx, `SELECT m.object_id, m.object_version,
    (SELECT count(*) FROM herald.messages l WHERE l.tenant_id = m.tenant_id AND l.object_id = m.object_id AND l.object_version < m.object_version)
FROM herald.messages m WHERE m.id = $1`, id).Scan(&object, &version, &lower))
			if lower != version-1 {
				mu.Lock()
				outOfOrder = append(outOfOrder, fmt.Sprintf("%s version %d relayed with %d lower versions in Herald", object, version, lower))
				mu.Unlock()
			}
		}
		time.Sleep(5 * time.Millisecond) // a slow mark: the next step overlaps it
		return nil
	}
	for range 2 {
		run(t, b.newRelay(t, func(cfg *relay.Config) {
			cfg.BatchSize = 3
			cfg.PollInterval = 10 * time.Millisecond
			relay.SetAfterHeraldCommit(cfg, check)
		}))
	}
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := range 25 {
				b.publish(t, ctx, invoice(p*25+i))
			}
		})
	}
	wg.Wait()
	eventually(t, 30*time.Second, "every message relayed", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL") == 0
	})
	require.Equal(t, 100, count(t, b.herald, "SELECT count(*) FROM herald.messages"))
	require.Equal(t, 3, count(t, b.herald, "SELECT count(DISTINCT object_id) FROM herald.messages"))
	require.Equal(t, 0, count(t, b.herald, `SELECT count(*) FROM herald.messages m
WHERE m.object_version <> (SELECT count(*) FROM herald.messages l WHERE l.object_id = m.object_id AND l.object_version <= m.object_version)`),
		"each object's versions are 1 to n, each once")
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, outOfOrder)
}
