package outbox_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/outbox"
)

// Every kind of bad input is a *ValidationError naming the field, and the
// producer can still commit its own work in the same transaction.
func TestPublishRejectsBadInput(t *testing.T) {
	t.Parallel()

	with := func(change func(*outbox.Message)) outbox.Message {
		msg := invoicePaid("inv_1")
		change(&msg)
		return msg
	}
	oversized := map[string]string{"blob": strings.Repeat("x", outbox.DefaultMaxPayloadBytes)}

	tests := []struct {
		name    string
		msg     outbox.Message
		field   string
		problem string
	}{
		{"unknown tenant", with(func(m *outbox.Message) { m.Tenant = "initech" }), "tenant", `"initech" does not exist`},
		{"empty tenant", with(func(m *outbox.Message) { m.Tenant = "" }), "tenant", "is empty"},
		{"empty type", with(func(m *outbox.Message) { m.Type = "" }), "type", "is empty"},
		{"upper-case type", with(func(m *outbox.Message) { m.Type = "Invoice.Paid" }), "type", "is malformed"},
		{"type with a space", with(func(m *outbox.Message) { m.Type = "invoice paid" }), "type", "is malformed"},
		{"type starting with a dot", with(func(m *outbox.Message) { m.Type = ".paid" }), "type", "is malformed"},
		{"type too long", with(func(m *outbox.Message) { m.Type = strings.Repeat("a", 129) }), "type", "at most 128"},
		{"type not UTF-8", with(func(m *outbox.Message) { m.Type = "invoice.\xff" }), "type", "not valid UTF-8"},
		{"empty object id", with(func(m *outbox.Message) { m.ObjectID = "" }), "object_id", "is empty"},
		{"object id too long", with(func(m *outbox.Message) { m.ObjectID = strings.Repeat("i", 257) }), "object_id", "at most 256"},
		{"object id with NUL", with(func(m *outbox.Message) { m.ObjectID = "inv\x001" }), "object_id", "NUL byte"},
		{"idempotency key too long", with(func(m *outbox.Message) { m.IdempotencyKey = strings.Repeat("k", 257) }), "idempotency_key", "at most 256"},
		{"nil data", with(func(m *outbox.Message) { m.Data = nil }), "data", "is missing"},
		{"array data", with(func(m *outbox.Message) { m.Data = []int{1, 2} }), "data", "is a JSON array; it must be a JSON object"},
		{"string data", with(func(m *outbox.Message) { m.Data = "paid" }), "data", "is a JSON string"},
		{"null raw data", with(func(m *outbox.Message) { m.Data = json.RawMessage("null") }), "data", "is a JSON null"},
		{"malformed raw data", with(func(m *outbox.Message) { m.Data = json.RawMessage(`{"a":`) }), "data", "cannot be encoded as JSON"},
		{"unencodable data", with(func(m *outbox.Message) { m.Data = map[string]any{"ch": make(chan int)} }), "data", "cannot be encoded as JSON"},
		{"NUL escape in data", with(func(m *outbox.Message) { m.Data = map[string]string{"a": "\x00"} }), "data", "is not valid JSON"},
		{"number Postgres cannot hold", with(func(m *outbox.Message) { m.Data = json.RawMessage(`{"a":1e1000000}`) }), "data", "is not valid JSON"},
		{"oversized data", with(func(m *outbox.Message) { m.Data = oversized }), "data", "the limit is 262144 bytes"},
	}
	b, ctx := setup(t)
	_, err := b.pool.Exec(ctx, "CREATE TABLE producer_work (name text PRIMARY KEY)")
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tx, err := b.pool.Begin(ctx)
			require.NoError(t, err)
			_, err = outbox.Publish(ctx, tx, tt.msg)
			var invalid *outbox.ValidationError
			require.ErrorAs(t, err, &invalid)
			require.Equal(t, tt.field, invalid.Field)
			require.Contains(t, invalid.Problem, tt.problem)
			require.Contains(t, err.Error(), tt.field+" ")

			_, err = tx.Exec(ctx, "INSERT INTO producer_work (name) VALUES ($1)", tt.name)
			require.NoError(t, err, "the producer's transaction must stay usable after a rejected publish")
			require.NoError(t, tx.Commit(ctx))
		})
	}
	t.Cleanup(func() {
		var done int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM producer_work").Scan(&done))
		require.Equal(t, len(tests), done, "every producer transaction committed its own work")
		require.Zero(t, b.messageCount(t, ctx))
		require.Zero(t, b.objectVersion(t, ctx, "inv_1"))
	})
}

func TestPublishPayloadLimitIsASetting(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "SET LOCAL herald.max_payload_bytes = '64'")
	require.NoError(t, err)

	msg := invoicePaid("inv_1")
	msg.Data = map[string]string{"note": strings.Repeat("n", 64)}
	_, err = outbox.Publish(ctx, tx, msg)
	var invalid *outbox.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Contains(t, invalid.Problem, "the limit is 64 bytes")

	msg.Data = map[string]string{"note": "short"}
	_, err = outbox.Publish(ctx, tx, msg)
	require.NoError(t, err)
}

func TestPublishNilTransaction(t *testing.T) {
	t.Parallel()

	_, err := outbox.Publish(t.Context(), nil, invoicePaid("inv_1"))
	require.ErrorContains(t, err, "transaction is nil")
	var invalid *outbox.ValidationError
	require.False(t, errors.As(err, &invalid))
}

// ValidateType in Go and the check in herald.try_publish accept and reject
// the same types with the same words.
func TestValidateTypeAgreesWithSQL(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	for _, typ := range []string{
		"invoice.paid", "a", "0", "user_created", "order-shipped.v2", "a..b", "x-", strings.Repeat("a", 128),
		"", "Invoice.paid", ".paid", "_paid", "-paid", "invoice paid", "invoice/paid", "invoïce", "a*", "a<b&c", "tab\there", strings.Repeat("a", 129),
	} {
		var problem *string
		err := b.pool.QueryRow(ctx, "SELECT problem FROM herald.try_publish('acme', $1, 'inv_1', '{}', NULL)", typ).Scan(&problem)
		require.NoError(t, err)
		goErr := outbox.ValidateType(typ)
		if problem == nil {
			require.NoError(t, goErr, "SQL accepts %q", typ)
			continue
		}
		require.Error(t, goErr, "SQL rejects %q: %s", typ, *problem)
		require.Equal(t, *problem, goErr.Error(), "same words for %q", typ)
	}
}
