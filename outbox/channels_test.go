package outbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/outbox"
)

// channelsOf reads the channels stored with a message.
func (b *testBundle) channelsOf(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	var channels []string
	require.NoError(t, b.pool.QueryRow(t.Context(), "SELECT channels FROM herald.messages WHERE id = $1", id).Scan(&channels))
	return channels
}

func TestPublishStoresChannels(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	msg := invoicePaid("inv_1")
	msg.Channels = []string{"project-1", "eu", "project-1"}
	p := b.publishCommitted(t, ctx, msg)
	require.Equal(t, []string{"eu", "project-1"}, b.channelsOf(t, p.ID), "distinct, in order")
	require.NotContains(t, string(p.Body), "project-1", "channels route; they are not in the body")

	none := b.publishCommitted(t, ctx, invoicePaid("inv_2"))
	require.Empty(t, b.channelsOf(t, none.ID))

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	with, without := invoicePaid("inv_3"), invoicePaid("inv_4")
	with.Channels = []string{"us"}
	batch, err := outbox.PublishMany(ctx, tx, []outbox.Message{without, with})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Empty(t, b.channelsOf(t, batch[0].ID))
	require.Equal(t, []string{"us"}, b.channelsOf(t, batch[1].ID))
}

func TestPublishRejectsBadChannels(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	for _, channels := range [][]string{
		{""}, {"a b"}, {"é"}, {"nul\x00"}, {strings.Repeat("c", outbox.MaxChannelLength+1)},
		strings.Split("a,b,c,d,e,f,g,h,i,j,k", ","),
	} {
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		msg := invoicePaid("inv_1")
		msg.Channels = channels
		_, err = outbox.Publish(ctx, tx, msg)
		var invalid *outbox.ValidationError
		require.True(t, errors.As(err, &invalid), "%q: %v", channels, err)
		require.Equal(t, "channels", invalid.Field)
		_, err = tx.Exec(ctx, "SELECT 1")
		require.NoError(t, err, "the producer's transaction stays usable")
		require.NoError(t, tx.Rollback(ctx))
	}
	require.Zero(t, b.messageCount(t, ctx))
}

// ValidateChannels in Go and herald.channels_problem in SQL accept and
// reject the same channels with the same words.
func TestValidateChannelsAgreesWithSQL(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	for _, channels := range [][]string{
		{"eu"}, {"project-1", "A.b:c_d"}, {strings.Repeat("c", 128)}, nil,
		{""}, {"a b"}, {"é"}, {"a/b"}, {strings.Repeat("c", 129)}, strings.Split("a,b,c,d,e,f,g,h,i,j,k", ","),
	} {
		var problem *string
		err := b.pool.QueryRow(ctx, "SELECT problem FROM herald.try_publish('acme', 'invoice.paid', 'inv_1', '{}', NULL, NULL, $1)", channels).Scan(&problem)
		require.NoError(t, err)
		goErr := outbox.ValidateChannels(channels)
		if problem == nil {
			require.NoError(t, goErr, "SQL accepts %q", channels)
			continue
		}
		require.Error(t, goErr, "SQL rejects %q: %s", channels, *problem)
		require.Equal(t, *problem, goErr.Error(), "same words for %q", channels)
	}
}

// Producers in other languages publish with channels through plain SQL,
// and every call written before channels existed still works.
func TestSQLPublishChannels(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	var id uuid.UUID
	var version int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT * FROM herald.publish('acme', 'invoice.paid', 'inv_1', '{}',
		channels => ARRAY['eu', 'project-1'])`).Scan(&id, &version))
	require.Equal(t, []string{"eu", "project-1"}, b.channelsOf(t, id))

	require.NoError(t, b.pool.QueryRow(ctx, `SELECT message_id FROM herald.publish_many('acme', '[
		{"type": "invoice.paid", "object_id": "inv_2", "data": {}, "channels": ["us"]},
		{"type": "invoice.paid", "object_id": "inv_3", "data": {}}
	]') WHERE item_index = 0`).Scan(&id))
	require.Equal(t, []string{"us"}, b.channelsOf(t, id))

	// The signatures of 0003, 0019 and 0020, positional and named.
	for _, call := range []string{
		`SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_4', '{}')`,
		`SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_4', '{}', 'key-1')`,
		`SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_4', '{}', NULL, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')`,
		`SELECT message_id FROM herald.publish(tenant => 'acme', type => 'invoice.paid', object_id => 'inv_4', data => '{}')`,
		`SELECT message_id FROM herald.try_publish('acme', 'invoice.paid', 'inv_4', '{}', NULL)`,
		`SELECT message_id FROM herald.try_publish_many('acme', ARRAY['invoice.paid'], ARRAY['inv_4'], ARRAY['{}'], ARRAY[NULL])`,
		`SELECT message_id FROM herald.try_publish_many('acme', ARRAY['invoice.paid'], ARRAY['inv_4'], ARRAY['{}'], ARRAY[NULL], NULL)`,
		`SELECT message_id FROM herald.publish_many('acme', '[{"type": "invoice.paid", "object_id": "inv_4", "data": {}}]')`,
		`SELECT message_id FROM herald.publish_many('acme', '[{"type": "invoice.paid", "object_id": "inv_4", "data": {}}]', NULL)`,
	} {
		require.NoError(t, b.pool.QueryRow(ctx, call).Scan(&id), call)
		require.Empty(t, b.channelsOf(t, id), call)
	}

	for _, tt := range []struct{ name, sql, message string }{
		{"bad name", `SELECT herald.publish('acme', 'invoice.paid', 'inv_1', '{}', channels => ARRAY['a b'])`,
			`herald.publish: channels "a b" is not a channel name`},
		{"not an array", `SELECT * FROM herald.publish_many('acme', '[{"type": "a", "object_id": "o", "data": {}, "channels": "eu"}]')`,
			`events[0].channels is a JSON string; send an array of channel names`},
		{"not a string", `SELECT * FROM herald.publish_many('acme', '[{"type": "a", "object_id": "o", "data": {}, "channels": [1]}]')`,
			`events[0].channels holds a JSON number; every channel is a string`},
		{"wrong length", `SELECT * FROM herald.try_publish_many('acme', ARRAY['a'], ARRAY['o'], ARRAY['{}'], ARRAY[NULL], NULL, '[]')`,
			`channels must be NULL or a JSON array with one element per event (1 events)`},
	} {
		_, err := b.pool.Exec(ctx, tt.sql)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, tt.name)
		require.Equal(t, "22023", pgErr.Code, "invalid_parameter_value")
		require.Contains(t, pgErr.Message, tt.message, tt.name)
	}
}
