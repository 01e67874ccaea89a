package dispatcher_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// A delivery job that returns errors (the database refuses to record its
// attempts) is retried within minutes however many errors it has had: after
// a brownout of ten errors River's default policy (attempt⁴ seconds) put
// the next attempt four hours out.
func TestJobErrorsAreRetriedWithinMinutes(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint, _ := b.endpoint(t, ctx, tenant, r.URL)
	_, err := b.pool.Exec(ctx, `CREATE FUNCTION public.refuse_attempts() RETURNS trigger LANGUAGE plpgsql
AS $$ BEGIN RAISE EXCEPTION 'the test refuses attempts'; END $$;
CREATE TRIGGER refuse_attempts BEFORE INSERT ON herald.attempts FOR EACH ROW EXECUTE FUNCTION public.refuse_attempts()`)
	require.NoError(t, err)
	id := b.deliveryRow(t, endpoint, deliverystatus.Pending)
	res, err := b.inserter(t).Insert(ctx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE herald.river_job
SET attempt = 10, errors = array_fill('{"at": "2026-01-01T00:00:00Z", "attempt": 1, "error": "brownout", "trace": ""}'::jsonb, ARRAY[10])
WHERE id = $1`, res.Job.ID)
	require.NoError(t, err)

	b.start(t, dispatcher.Config{})

	var delay time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for {
		var errors int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(array_length(errors, 1), 0),
    (coalesce(extract(epoch FROM scheduled_at - (errors[array_length(errors, 1)]->>'at')::timestamptz), 0) * 1e9)::bigint
FROM herald.river_job WHERE id = $1`, res.Job.ID).Scan(&errors, &delay))
		if errors > 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the job has %d errors; want the 11th", errors)
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.LessOrEqual(t, delay, delivery.MaxJobRetryDelay, "the 12th attempt is due %s after the 11th error", delay)
}
