package delivery_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/testclock"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

// lockedBuffer collects log output from concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// secretsBundle sends deliveries signed with the store's secrets, one job
// run at a time on a clock shared by River, the worker and the store, and
// logs everything at debug level into logs.
type secretsBundle struct {
	pool     *pgxpool.Pool
	store    *store.Store
	clock    *testclock.Clock
	logs     *lockedBuffer
	worker   *rivertest.Worker[delivery.Args, pgx.Tx]
	tx       pgx.Tx
	receiver *webhooktest.Receiver
}

func setupSecrets(t *testing.T) (*secretsBundle, context.Context) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	clock := testclock.New(time.Now().UTC().Truncate(time.Second))
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	st, err := store.New(pool, store.Config{Box: box, CheckURL: guard.CheckURL, Now: clock.Now})
	require.NoError(t, err)
	_, err = st.CreateTenant(ctx, store.NewTenant{ID: tenant})
	require.NoError(t, err)

	logs := &lockedBuffer{}
	w, err := delivery.NewWorker(delivery.Config{
		DB: pool, Secrets: st, Policy: fast, Transport: guard.Transport(), Now: clock.Now,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return &secretsBundle{
		pool:  pool,
		store: st,
		clock: clock,
		logs:  logs,
		worker: rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{Schema: migrations.Schema, Test: river.TestConfig{Time: clock}},
			river.Worker[delivery.Args](w)),
		tx:       tx,
		receiver: webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK)),
	}, ctx
}

// send publishes a message, delivers it to endpoint at the bundle's clock
// and returns the request the receiver got.
func (b *secretsBundle) send(t *testing.T, ctx context.Context, endpoint uuid.UUID) webhooktest.Request {
	t.Helper()
	p, err := outbox.PublishPool(ctx, b.pool, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{"amount": 1}})
	require.NoError(t, err)
	id := uuid.Must(historyid.Child(p.ID))
	_, err = b.pool.Exec(ctx, "INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id) VALUES ($1, $2, $3, $4)", id, p.ID, endpoint, tenant)
	require.NoError(t, err)
	before := b.receiver.Count()
	result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, result.EventKind)
	require.Equal(t, before+1, b.receiver.Count())
	return b.receiver.Requests()[before]
}

// verifies reports whether a receiver holding only secret accepts req, at
// the time it was signed.
func (b *secretsBundle) verifies(req webhooktest.Request, secret signing.Secret) error {
	now := b.clock.Now()
	return signing.Verifier{Secrets: []signing.Secret{secret}, Now: func() time.Time { return now }}.Verify(req.Header, req.Body)
}

func (b *secretsBundle) storedSecrets(t *testing.T, ctx context.Context, endpoint uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.endpoint_secrets WHERE endpoint_id = $1", endpoint).Scan(&n))
	return n
}

// dump is every row of every table in Herald's schema, as COPY writes it:
// what a database dump would hold (a partitioned table's rows twice: from
// it and from its partitions).
func (b *secretsBundle) dump(t *testing.T, ctx context.Context) string {
	t.Helper()
	rows, err := b.pool.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", migrations.Schema)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, tables, "endpoint_secrets")
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var out bytes.Buffer
	for _, table := range tables {
		_, err := conn.Conn().PgConn().CopyTo(ctx, &out, "COPY (SELECT * FROM "+pgx.Identifier{migrations.Schema, table}.Sanitize()+") TO STDOUT")
		require.NoError(t, err)
	}
	return out.String()
}

// forms are the ways a secret could show up in text: its whsec_/whsk_
// form, its base64 key, and the key bytes in hex and raw.
func forms(t *testing.T, secret signing.Secret) []string {
	t.Helper()
	text := secret.String()
	_, b64, ok := strings.Cut(text, "_")
	require.True(t, ok)
	key, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	return []string{text, b64, hex.EncodeToString(key), string(key)}
}

// During a rotation's grace period every attempt carries a signature of the
// old and of the new secret, so a receiver holding either one verifies;
// after it, only the new one signs and the old one is deleted. Neither
// secret shows in the logs or in a dump of the database.
func TestRotationSignsWithBothSecretsDuringTheGracePeriod(t *testing.T) {
	t.Parallel()
	b, ctx := setupSecrets(t)
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: b.receiver.URL})
	require.NoError(t, err)
	old, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)

	before := b.send(t, ctx, e.ID)
	require.NoError(t, b.verifies(before, old))
	require.Len(t, strings.Fields(before.Header.Get(signing.HeaderSignature)), 1)

	fresh, err := b.store.RotateSecret(ctx, e.ID, time.Hour)
	require.NoError(t, err)
	rotated := b.clock.Now()
	for _, at := range []time.Duration{0, 30 * time.Minute, time.Hour - time.Second} {
		b.clock.Set(rotated.Add(at))
		during := b.send(t, ctx, e.ID)
		require.Len(t, strings.Fields(during.Header.Get(signing.HeaderSignature)), 2, "two signatures %s into the grace period", at)
		require.NoError(t, b.verifies(during, old), "a receiver holding only the old secret verifies")
		require.NoError(t, b.verifies(during, fresh), "a receiver holding only the new secret verifies")
	}
	require.Equal(t, 2, b.storedSecrets(t, ctx, e.ID))

	b.clock.Set(rotated.Add(time.Hour))
	after := b.send(t, ctx, e.ID)
	require.Len(t, strings.Fields(after.Header.Get(signing.HeaderSignature)), 1)
	require.NoError(t, b.verifies(after, fresh))
	require.ErrorIs(t, b.verifies(after, old), signing.ErrNoMatchingSignature, "the old secret no longer signs")
	require.Equal(t, 1, b.storedSecrets(t, ctx, e.ID), "the old secret is gone")

	logs, dump := b.logs.String(), b.dump(t, ctx)
	require.Contains(t, logs, "delivered", "the worker logged its attempts")
	require.Contains(t, dump, e.ID.String(), "the dump holds the endpoint")
	for _, secret := range []signing.Secret{old, fresh} {
		for _, form := range forms(t, secret) {
			require.NotContains(t, logs, form, "a secret is in the logs")
			require.NotContains(t, dump, form, "a secret is in the database dump")
		}
	}
}

// An endpoint may sign with ed25519 instead: attempts carry a v1a signature
// that its owner verifies with the public key alone, rotation keeps the
// algorithm, and the private key is nowhere in the database in clear.
func TestEd25519EndpointSignsWithV1a(t *testing.T) {
	t.Parallel()
	b, ctx := setupSecrets(t)
	private, err := signing.GenerateEd25519Secret()
	require.NoError(t, err)
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: b.receiver.URL, Secret: private})
	require.NoError(t, err)
	public, err := private.Public()
	require.NoError(t, err)

	req := b.send(t, ctx, e.ID)
	signature := req.Header.Get(signing.HeaderSignature)
	require.True(t, strings.HasPrefix(signature, "v1a,"), "signature %q", signature)
	require.NoError(t, b.verifies(req, public))

	fresh, err := b.store.RotateSecret(ctx, e.ID, 0)
	require.NoError(t, err)
	require.Equal(t, signing.Ed25519, fresh.Algorithm())
	freshPublic, err := fresh.Public()
	require.NoError(t, err)
	during := b.send(t, ctx, e.ID)
	for _, sig := range strings.Fields(during.Header.Get(signing.HeaderSignature)) {
		require.True(t, strings.HasPrefix(sig, "v1a,"), "signature %q", sig)
	}
	require.NoError(t, b.verifies(during, public))
	require.NoError(t, b.verifies(during, freshPublic))

	dump := b.dump(t, ctx)
	for _, secret := range []signing.Secret{private, fresh} {
		for _, form := range forms(t, secret) {
			require.NotContains(t, dump, form, "a private key is in the database dump")
			require.NotContains(t, b.logs.String(), form, "a private key is in the logs")
		}
	}
}
