package outbox_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/outbox"
)

func TestPublishManyPublishesInOrder(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.publishCommitted(t, ctx, invoicePaid("inv_2"))

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	msgs := []outbox.Message{invoicePaid("inv_1"), invoicePaid("inv_2"), invoicePaid("inv_1"), invoicePaid("inv_3")}
	published, err := outbox.PublishMany(ctx, tx, msgs)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	require.Len(t, published, 4)
	versions := []int64{published[0].Version, published[1].Version, published[2].Version, published[3].Version}
	require.Equal(t, []int64{1, 2, 2, 1}, versions, "an object's events take consecutive versions in slice order")
	for i := 1; i < len(published); i++ {
		require.Less(t, published[i-1].ID.String(), published[i].ID.String(), "ids sort in slice order")
		require.Equal(t, published[0].CreatedAt, published[i].CreatedAt)
	}
	var wire wireBody
	require.NoError(t, json.Unmarshal(published[2].Body, &wire))
	require.Equal(t, "inv_1", wire.Object.ID)
	require.Equal(t, int64(2), wire.Object.Version)
	require.Equal(t, 5, b.messageCount(t, ctx))
	require.Equal(t, int64(2), b.objectVersion(t, ctx, "inv_1"))
	require.Equal(t, int64(2), b.objectVersion(t, ctx, "inv_2"))

	// The outbox's order (created_at, id) is the batch's order.
	rows, err := b.pool.Query(ctx, "SELECT object_id, object_version FROM herald.messages WHERE created_at = $1 ORDER BY created_at, id", published[0].CreatedAt)
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		var obj string
		var v int64
		require.NoError(t, rows.Scan(&obj, &v))
		got = append(got, fmt.Sprintf("%s@%d", obj, v))
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"inv_1@1", "inv_2@2", "inv_1@2", "inv_3@1"}, got)
}

// A bad message fails the whole batch: every bad one is named by index,
// nothing is published, and the producer's transaction stays usable.
func TestPublishManyRejectsTheWholeBatch(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	badType := invoicePaid("inv_2")
	badType.Type = "Invoice Paid"
	badData := invoicePaid("inv_4")
	badData.Data = json.RawMessage(`{"a":"\u0000"}`)
	noObject := invoicePaid("")
	msgs := []outbox.Message{invoicePaid("inv_1"), badType, invoicePaid("inv_3"), badData, noObject}

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = outbox.PublishMany(ctx, tx, msgs)
	var batch *outbox.BatchError
	require.ErrorAs(t, err, &batch)
	require.Len(t, batch.Items, 3)
	require.Equal(t, 1, batch.Items[0].Index)
	require.Equal(t, "type", batch.Items[0].Field)
	require.Equal(t, 3, batch.Items[1].Index)
	require.Equal(t, "data", batch.Items[1].Field)
	require.Contains(t, batch.Items[1].Problem, "is not valid JSON")
	require.Equal(t, 4, batch.Items[2].Index)
	require.Equal(t, "object_id", batch.Items[2].Field)
	require.Contains(t, err.Error(), `message 1: type "Invoice Paid" is malformed`)

	_, err = outbox.Publish(ctx, tx, invoicePaid("inv_9"))
	require.NoError(t, err, "the transaction is still usable")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 1, b.messageCount(t, ctx))
	require.Zero(t, b.objectVersion(t, ctx, "inv_1"), "nothing of the rejected batch was published")
}

func TestPublishManyBatchProblems(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	tooMany := make([]outbox.Message, outbox.MaxBatch+1)
	for i := range tooMany {
		tooMany[i] = invoicePaid(fmt.Sprintf("inv_%d", i))
	}
	_, err := outbox.PublishManyPool(ctx, b.pool, tooMany)
	var invalid *outbox.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "events", invalid.Field)
	require.Contains(t, invalid.Problem, "at most 1000")

	published, err := outbox.PublishManyPool(ctx, b.pool, tooMany[:outbox.MaxBatch])
	require.NoError(t, err, "MaxBatch messages are one batch")
	require.Len(t, published, outbox.MaxBatch)

	unknown := invoicePaid("inv_1")
	unknown.Tenant = "initech"
	_, err = outbox.PublishManyPool(ctx, b.pool, []outbox.Message{unknown})
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "tenant", invalid.Field)
	require.Contains(t, invalid.Problem, `"initech" does not exist`)

	other := invoicePaid("inv_1")
	other.Tenant = "globex"
	_, err = outbox.PublishManyPool(ctx, b.pool, []outbox.Message{invoicePaid("inv_1"), other})
	var batch *outbox.BatchError
	require.ErrorAs(t, err, &batch)
	require.Equal(t, 1, batch.Items[0].Index)
	require.Equal(t, "tenant", batch.Items[0].Field)

	none, err := outbox.PublishManyPool(ctx, b.pool, nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestPublishManyIdempotencyKeys(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	keyed := func(object, key string) outbox.Message {
		m := invoicePaid(object)
		m.IdempotencyKey = key
		return m
	}
	first := b.publishCommitted(t, ctx, keyed("inv_1", "pay-1"))

	// A key repeated inside the batch names both messages.
	_, err := outbox.PublishManyPool(ctx, b.pool, []outbox.Message{keyed("inv_2", "pay-2"), invoicePaid("inv_3"), keyed("inv_4", "pay-2")})
	var batch *outbox.BatchError
	require.ErrorAs(t, err, &batch)
	require.Len(t, batch.Items, 1)
	require.Equal(t, 2, batch.Items[0].Index)
	require.Equal(t, "idempotency_key", batch.Items[0].Field)
	require.Contains(t, batch.Items[0].Problem, "repeats the key of item 0")

	// A key published before returns the first message and takes nothing.
	published, err := outbox.PublishManyPool(ctx, b.pool, []outbox.Message{keyed("inv_1", "pay-1"), keyed("inv_1", "pay-3"), invoicePaid("inv_1")})
	require.NoError(t, err)
	require.True(t, published[0].Duplicate)
	require.Equal(t, first.ID, published[0].ID)
	require.Equal(t, first.Version, published[0].Version)
	require.Equal(t, first.CreatedAt, published[0].CreatedAt)
	require.Nil(t, published[0].Body)
	require.False(t, published[1].Duplicate)
	require.Equal(t, []int64{2, 3}, []int64{published[1].Version, published[2].Version})
	require.Equal(t, 3, b.messageCount(t, ctx))

	// The key of a batch is a key for single publishes too.
	again := b.publishCommitted(t, ctx, keyed("inv_9", "pay-3"))
	require.True(t, again.Duplicate)
	require.Equal(t, published[1].ID, again.ID)
	require.Equal(t, int64(2), again.Version)
}

// Producers in other languages publish batches with plain SQL.
func TestSQLPublishMany(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	rows, err := b.pool.Query(ctx, `SELECT * FROM herald.publish_many('acme', '[
		{"type": "invoice.paid", "object_id": "inv_1", "data": {"amount": 4200}},
		{"type": "invoice.paid", "object_id": "inv_1", "data": {"amount": 990}, "idempotency_key": "pay-10"}
	]')`)
	require.NoError(t, err)
	type row struct {
		Index     int32
		Version   int64
		Duplicate bool
	}
	var got []row
	for rows.Next() {
		var r row
		var id [16]byte
		require.NoError(t, rows.Scan(&r.Index, &id, &r.Version, &r.Duplicate))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []row{{0, 1, false}, {1, 2, false}}, got)

	var dup bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT duplicate FROM herald.publish_many('acme',
		'[{"type": "invoice.paid", "object_id": "inv_1", "data": {}, "idempotency_key": "pay-10"}]')`).Scan(&dup))
	require.True(t, dup)

	for _, tt := range []struct{ name, events, message string }{
		{"not an array", `{"type": "invoice.paid"}`, "events must be a JSON array"},
		{"not an object", `[{"type": "invoice.paid", "object_id": "inv_1", "data": {}}, 7]`, "events[1] is a JSON number"},
		{"unknown field", `[{"type": "invoice.paid", "object_id": "inv_1", "data": {}, "kind": "x"}]`, `events[0] has the unknown field "kind"`},
		{"bad items", `[{"type": "Bad", "object_id": "inv_1", "data": {}}, {"type": "a", "object_id": "inv_1"}]`,
			`events[0].type "Bad" is malformed; use lower-case letters, digits, ".", "_" and "-", starting with a letter or digit, for example invoice.paid; events[1].data is missing`},
		{"repeated key", `[{"type": "a", "object_id": "o", "data": {}, "idempotency_key": "k"}, {"type": "a", "object_id": "o", "data": {}, "idempotency_key": "k"}]`,
			"events[1].idempotency_key repeats the key of item 0"},
		{"empty", `[]`, "events is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.pool.Exec(ctx, "SELECT * FROM herald.publish_many('acme', $1)", tt.events)
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr)
			require.Equal(t, "22023", pgErr.Code, "invalid_parameter_value")
			require.Contains(t, pgErr.Message, tt.message)
		})
	}
	require.Equal(t, 2, b.messageCount(t, ctx))
}

// One event without an idempotency key takes a path of its own in
// herald.try_publish_many (migrations/0047_lean_single_publish.sql); it
// must number an object's versions and build its body, channels and
// returned row exactly as a batch does, whichever path came before.
func TestPublishOneAndManyAgree(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	withChannels := invoicePaid("inv_1")
	withChannels.Channels = []string{"eu", "billing", "eu"}
	keyed := invoicePaid("inv_1")
	keyed.IdempotencyKey = "k-1"

	var published []outbox.Published
	one := func(m outbox.Message) {
		published = append(published, b.publishCommitted(t, ctx, m))
	}
	one(invoicePaid("inv_1"))
	one(withChannels)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	many, err := outbox.PublishMany(ctx, tx, []outbox.Message{invoicePaid("inv_1"), withChannels})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	published = append(published, many...)
	one(keyed)
	one(invoicePaid("inv_1"))

	for i, p := range published {
		var (
			body     string
			version  int64
			channels []string
		)
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT body, object_version, channels FROM herald.messages WHERE id = $1", p.ID).
			Scan(&body, &version, &channels))
		require.Equal(t, int64(i+1), p.Version, "event %d", i)
		require.Equal(t, p.Version, version, "event %d", i)
		require.JSONEq(t, body, string(p.Body), "event %d: the returned body is the stored one", i)
		require.Equal(t, fmt.Sprintf(`{"type":"invoice.paid","timestamp":%q,"object":{"id":"inv_1","version":%d},"data":{"amount": 4200, "currency": "eur"}}`,
			p.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), i+1), body, "event %d", i)
		if i == 1 || i == 3 {
			require.Equal(t, []string{"billing", "eu"}, channels, "event %d", i)
		} else {
			require.Empty(t, channels, "event %d", i)
		}
	}
}
