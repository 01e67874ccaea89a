package outbox_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// Producers in other languages publish with plain SQL.
func TestSQLPublish(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	var (
		id      uuid.UUID
		version int64
	)
	err = tx.QueryRow(ctx, `SELECT * FROM herald.publish('acme', 'invoice.paid', 'inv_1', '{"amount": 4200}')`).Scan(&id, &version)
	require.NoError(t, err)
	require.Equal(t, int64(1), version)
	require.Equal(t, uuid.Version(7), id.Version())
	err = tx.QueryRow(ctx, `SELECT message_id, version FROM herald.publish(
		tenant => 'acme', type => 'invoice.paid', object_id => 'inv_1',
		data => '{"amount": 4300}', idempotency_key => 'payment-9')`).Scan(&id, &version)
	require.NoError(t, err)
	require.Equal(t, int64(2), version)
	require.NoError(t, tx.Commit(ctx))

	var body string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT body FROM herald.messages WHERE id = $1", id).Scan(&body))
	var wire wireBody
	require.NoError(t, json.Unmarshal([]byte(body), &wire))
	require.Equal(t, int64(2), wire.Object.Version)
	require.Equal(t, map[string]any{"amount": float64(4300)}, wire.Data)

	var againID uuid.UUID
	err = b.pool.QueryRow(ctx, `SELECT message_id, version FROM herald.publish('acme', 'invoice.paid', 'inv_1', '{}', 'payment-9')`).
		Scan(&againID, &version)
	require.NoError(t, err)
	require.Equal(t, id, againID, "a repeated idempotency key returns the first message")
	require.Equal(t, int64(2), version)
	require.Equal(t, int64(2), b.objectVersion(t, ctx, "inv_1"))
}

func TestSQLPublishRaisesForBadInput(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	tests := []struct {
		name, sql, message string
	}{
		{"unknown tenant", `SELECT herald.publish('initech', 'invoice.paid', 'inv_1', '{}')`, `herald.publish: tenant "initech" does not exist`},
		{"malformed type", `SELECT herald.publish('acme', 'Invoice Paid', 'inv_1', '{}')`, `herald.publish: type "Invoice Paid" is malformed`},
		{"empty object id", `SELECT herald.publish('acme', 'invoice.paid', '', '{}')`, "herald.publish: object_id is empty"},
		{"data not an object", `SELECT herald.publish('acme', 'invoice.paid', 'inv_1', '[1]')`, "herald.publish: data is a JSON array"},
		{"null data", `SELECT herald.publish('acme', 'invoice.paid', 'inv_1', NULL)`, "herald.publish: data is missing"},
		{"empty idempotency key", `SELECT herald.publish('acme', 'invoice.paid', 'inv_1', '{}', '')`, "herald.publish: idempotency_key is empty; pass NULL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.pool.Exec(ctx, tt.sql)
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr)
			require.Equal(t, "22023", pgErr.Code, "invalid_parameter_value")
			require.Contains(t, pgErr.Message, tt.message)
		})
	}
}

func TestSQLUUIDv7(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	at := time.Date(2026, 12, 2, 12, 0, 0, 123_456_000, time.UTC)
	var ids []uuid.UUID
	err := b.pool.QueryRow(ctx, `SELECT array[herald.uuid_v7($1), herald.uuid_v7($1 + interval '1 microsecond'),
		herald.uuid_v7($1 + interval '1 millisecond')]`, at).Scan(&ids)
	require.NoError(t, err)
	for _, id := range ids {
		require.Equal(t, uuid.Version(7), id.Version())
		require.Equal(t, uuid.RFC4122, id.Variant())
	}
	sec, nsec := ids[0].Time().UnixTime()
	require.Equal(t, at.Truncate(time.Millisecond), time.Unix(sec, nsec).UTC())
	require.Less(t, ids[0].String(), ids[2].String())
	// 456 µs into the millisecond is 456/1000 of 4096 in the 12 sub-millisecond bits.
	require.Equal(t, []byte{0x77, 0x4b}, ids[0][6:8])
}
