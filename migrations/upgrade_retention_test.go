package migrations_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/retention"
)

// A database upgraded with its data (migration 0024) holds, in its legacy
// partition, deliveries made seconds after their message, in another
// millisecond than the message's. A tenant's purge must find them there: it
// once looked a message's deliveries up in its millisecond only, took a
// message whose delivery was still pending for settled, and deleted it.
func TestATenantsPurgeFindsALegacyMessagesLaterDeliveries(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPoolFrom(t, pgtest.Empty)
	require.NoError(t, migrations.ApplyThrough(ctx, pool, lastUnpartitioned))
	endpoint := uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO herald.tenants (id) VALUES ('acme');
INSERT INTO herald.endpoints (id, tenant_id, url) VALUES ('`+endpoint.String()+`', 'acme', 'https://acme.invalid/hook')`)
	require.NoError(t, err)
	var published uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_1', '{}')`).Scan(&published))
	at := time.Now().Add(-2 * time.Hour)
	message := uuid.Must(historyid.Child(historyid.Bound(at)))
	_, err = pool.Exec(ctx, `UPDATE herald.messages SET id = $2, created_at = $3, dispatched_at = $3 WHERE id = $1`, published, message, at)
	require.NoError(t, err)
	pending := uuid.Must(historyid.Child(historyid.Bound(at.Add(2 * time.Second))))
	_, err = pool.Exec(ctx, `INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status, attempt_count)
VALUES ($1, $2, $3, 'acme', 'pending', 0)`, pending, message, endpoint)
	require.NoError(t, err)
	require.NoError(t, migrations.Apply(ctx, pool))
	_, err = pool.Exec(ctx, `UPDATE herald.tenants SET retention = interval '1 hour' WHERE id = 'acme'`)
	require.NoError(t, err)

	m, err := retention.New(retention.Config{Pool: pool, Interval: time.Minute, Retention: 3 * time.Hour, LockTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	rep, err := m.Pass(ctx)
	require.NoError(t, err)
	p := rep.Purged["acme"]
	require.NotNil(t, p, "the tenant with its own retention is purged")
	require.EqualValues(t, 0, p.Messages, "nothing of a message with a pending delivery goes")
	require.EqualValues(t, 1, p.Kept)
	var messages, deliveries int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM herald.messages WHERE id = $1), (SELECT count(*) FROM herald.deliveries WHERE id = $2)`,
		message, pending).Scan(&messages, &deliveries))
	require.Equal(t, 1, messages, "the message is kept")
	require.Equal(t, 1, deliveries, "its pending delivery is kept")
}
