package receiver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/receiver"
)

// inboxTemplate is a database with the receiver's tables and a small
// consumer table, accounts, for the tests' side effects.
var inboxTemplate = pgtest.Template{
	Name:        "receiver",
	Fingerprint: migrationsFingerprint(),
	Migrate: func(ctx context.Context, pool *pgxpool.Pool) error {
		if err := receiver.Migrate(ctx, pool); err != nil {
			return err
		}
		_, err := pool.Exec(ctx, `CREATE TABLE accounts (
    id           text PRIMARY KEY,
    credits      bigint NOT NULL DEFAULT 0,
    plan         text,
    plan_version bigint NOT NULL DEFAULT 0
)`)
		return err
	},
}

// migrationsFingerprint hashes the receiver's migration files (and this
// file's schema, by a version suffix) so a changed schema gets a fresh
// template database.
func migrationsFingerprint() string {
	paths, _ := filepath.Glob("migrations/*.sql")
	h := sha256.New()
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
	}
	h.Write([]byte("accounts v1"))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{ctx: t.Context(), pool: pgtest.NewPoolFrom(t, inboxTemplate)}
}

// storeEvent puts an event into the inbox the way the Handler does.
func (b *testBundle) storeEvent(t *testing.T, source, webhookID, typ string, data any) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{"type": typ, "timestamp": "2026-12-02T12:00:00Z", "data": data})
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `INSERT INTO webhook_inbox.events (source, webhook_id, type, payload) VALUES ($1, $2, $3, $4)`,
		source, webhookID, typ, payload)
	require.NoError(t, err)
}

// storeObjectEvent puts an event about version version of object into the
// inbox, from source "acme".
func (b *testBundle) storeObjectEvent(t *testing.T, webhookID, object string, version int64) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{"type": "object.updated", "timestamp": "2026-12-02T12:00:00Z",
		"object": map[string]any{"id": object, "version": version}, "data": map[string]any{}})
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `INSERT INTO webhook_inbox.events (source, webhook_id, type, object_id, object_version, payload)
VALUES ('acme', $1, 'object.updated', $2, $3, $4)`, webhookID, object, version, payload)
	require.NoError(t, err)
}

// credits returns an account's balance, 0 for an unknown account.
func (b *testBundle) credits(t *testing.T, account string) int64 {
	t.Helper()
	var n int64
	err := b.pool.QueryRow(b.ctx, `SELECT coalesce((SELECT credits FROM accounts WHERE id = $1), 0)`, account).Scan(&n)
	require.NoError(t, err)
	return n
}

// credit is the side effect of the tests' consumer.
func credit(ctx context.Context, tx pgx.Tx, account string, amount int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO accounts (id, credits) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + excluded.credits`, account, amount)
	return err
}

// creditData is the data of the tests' "account.credited" events.
type creditData struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// creditHandler is a HandleFunc that credits accounts.
func creditHandler(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
	var d creditData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return err
	}
	return credit(ctx, tx, d.Account, d.Amount)
}

// drain processes batches until none is due.
func drain(t *testing.T, ctx context.Context, w *receiver.Worker) int {
	t.Helper()
	total := 0
	for {
		n, err := w.ProcessBatch(ctx)
		require.NoError(t, err)
		if n == 0 {
			return total
		}
		total += n
	}
}

// emptyPool is a database without the receiver's tables.
func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return pgtest.NewPoolFrom(t, pgtest.Empty)
}
