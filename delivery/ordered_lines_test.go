package delivery_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
)

// The line functions of migrations 0030 and 0037, called as the fan-out,
// a resend and the recording of an attempt call them, on lines of several
// objects at once.
func TestOrderedLinesJoinPreemptAndSettle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	endpoint := testfactory.Endpoint(t, pool, nil)
	_, err := pool.Exec(ctx, `UPDATE herald.endpoints SET ordering = 'object' WHERE id = $1`, endpoint.ID)
	require.NoError(t, err)
	deliver := func(object string, version int64) uuid.UUID {
		m := testfactory.Message(t, pool, &testfactory.MessageOpts{TenantID: endpoint.TenantID, ObjectID: object, ObjectVersion: version})
		return testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{EndpointID: endpoint.ID, MessageID: m.ID}).ID
	}
	a2, a3, a1 := deliver("a", 2), deliver("a", 3), deliver("a", 1)
	b1, b2 := deliver("b", 1), deliver("b", 2)
	c1 := deliver("c", 1)

	inTx := func(f func(tx pgx.Tx) []delivery.Head) []uuid.UUID {
		t.Helper()
		var heads []delivery.Head
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			heads = f(tx)
			return nil
		}))
		ids := make([]uuid.UUID, len(heads))
		for i, h := range heads {
			ids[i] = h.DeliveryID
		}
		return ids
	}
	join := func(ids []uuid.UUID, preempt bool) []uuid.UUID {
		return inTx(func(tx pgx.Tx) []delivery.Head {
			heads, err := delivery.JoinLines(ctx, tx, ids, delivery.TriggerScheduled, preempt)
			require.NoError(t, err)
			return heads
		})
	}
	settle := func(ids ...uuid.UUID) []uuid.UUID {
		return inTx(func(tx pgx.Tx) []delivery.Head {
			// As the recording worker does, with each delivery's line.
			rows, err := tx.Query(ctx, `WITH u AS (
    SELECT d.id, d.endpoint_id, m.object_id FROM unnest($1::uuid[]) AS x (id)
    JOIN herald.deliveries d ON d.id = x.id JOIN herald.messages m ON m.id = d.message_id
)
SELECT new_head, new_endpoint, new_generation, new_batchable, new_trigger FROM herald.ordered_settle(
    (SELECT array_agg(id ORDER BY id) FROM u), (SELECT array_agg(endpoint_id ORDER BY id) FROM u), (SELECT array_agg(object_id ORDER BY id) FROM u))`, ids)
			require.NoError(t, err)
			heads, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (delivery.Head, error) {
				var h delivery.Head
				var trigger string
				err := row.Scan(&h.DeliveryID, &h.EndpointID, &h.Generation, &h.Batchable, &trigger)
				return h, err
			})
			require.NoError(t, err)
			return heads
		})
	}
	head := func(object string) *uuid.UUID {
		t.Helper()
		var h *uuid.UUID
		err := pool.QueryRow(ctx, `SELECT head_delivery_id FROM herald.ordered_lines WHERE endpoint_id = $1 AND object_id = $2`, endpoint.ID, object).Scan(&h)
		if err == pgx.ErrNoRows {
			return nil
		}
		require.NoError(t, err)
		return h
	}
	generation := func(id uuid.UUID) int {
		var g int
		require.NoError(t, pool.QueryRow(ctx, `SELECT generation FROM herald.deliveries WHERE id = $1`, id).Scan(&g))
		return g
	}

	// One fan-out joins versions 2 and 3 of a and both of b: each line's
	// lowest version is its head, the others wait.
	require.ElementsMatch(t, []uuid.UUID{a2, b1}, join([]uuid.UUID{a3, b2, a2, b1}, true))
	require.Equal(t, a2, *head("a"))
	var queued []uuid.UUID
	rows, err := pool.Query(ctx, `SELECT delivery_id FROM herald.ordered_waiting WHERE endpoint_id = $1`, endpoint.ID)
	require.NoError(t, err)
	queued, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{a3, b2}, queued, "a new line's head is made with the line, never queued (migration 0050)")

	// A later fan-out commits version 1 of a: it goes ahead of version 2,
	// which waits again in a new generation that fences its job; c's line
	// starts with it.
	before := generation(a2)
	require.ElementsMatch(t, []uuid.UUID{a1, c1}, join([]uuid.UUID{a1, c1}, true))
	require.Equal(t, a1, *head("a"))
	require.Equal(t, before+1, generation(a2))

	// A resend of the head gets its job back; a resend of a waiting version
	// does not jump the line.
	require.Equal(t, []uuid.UUID{a1}, join([]uuid.UUID{a1}, false))
	require.Empty(t, join([]uuid.UUID{a3}, false))

	// Version 2 of a settled while waiting (its endpoint's deliveries were
	// cancelled, say): when version 1 settles, a passes over it to 3.
	_, err = pool.Exec(ctx, `UPDATE herald.deliveries SET status = $2 WHERE id = $1`, a2, deliverystatus.Cancelled)
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{a3, b2}, settle(a1, b1, c1))
	require.Equal(t, a3, *head("a"))
	require.Nil(t, head("c"), "a line left with nothing is deleted")

	var waiting int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM herald.ordered_waiting WHERE endpoint_id = $1`, endpoint.ID).Scan(&waiting))
	require.Zero(t, waiting, "the versions passed over and the new heads no longer wait")

	require.Empty(t, settle(a3, b2))
	require.Nil(t, head("a"))
	require.Nil(t, head("b"))
}
