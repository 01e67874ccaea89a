package delivery

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/schedule"
)

// recordedRow is what recording an attempt leaves in the database, without
// the ids that differ from delivery to delivery.
type recordedRow struct {
	Status         string
	AttemptCount   int
	FirstAttemptAt *time.Time
	LastAttemptAt  *time.Time
	NextAttemptAt  *time.Time
	CompletedAt    *time.Time
	LastStatusCode *int
	LastError      *string

	AttemptNumber   int
	Trigger         string
	StartedAt       time.Time
	DurationMS      int
	RequestHeaders  string
	StatusCode      *int
	Error           *string
	ResponseExcerpt string
	Outcome         string
	OwnMessage      bool
	OwnEndpoint     bool
}

// setupRecording gives a test a worker on its own database, with one
// endpoint and n pending deliveries to it that were never attempted.
func setupRecording(t *testing.T, n int) (*Worker, *pgxpool.Pool, []loaded) {
	t.Helper()
	pool := pgtest.NewPool(t)
	w, err := NewWorker(Config{
		DB: pool, Secrets: &countingSecrets{}, Logger: slog.New(slog.DiscardHandler),
		// A retry is due when its attempt ended: Decide draws from [0, 1 ns).
		Policy: schedule.Policy{Base: time.Nanosecond, Cap: time.Nanosecond, Window: time.Hour},
	})
	require.NoError(t, err)

	endpoint := testfactory.Endpoint(t, pool, nil)
	ds := make([]loaded, n)
	for i := range ds {
		row := testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{EndpointID: endpoint.ID})
		ds[i] = loaded{
			progress:   progress{status: row.Status},
			id:         row.ID,
			messageID:  row.MessageID,
			endpointID: row.EndpointID,
		}
	}
	return w, pool, ds
}

// outcomeCounts is an endpoint's attempt outcomes counted in
// endpoint_outcome_deltas as they were recorded (migration 0051), summed
// per hour: "hour succeeded failed" lines in hour order.
func outcomeCounts(t *testing.T, pool *pgxpool.Pool, endpointID uuid.UUID) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' ' || sum(succeeded) || ' ' || sum(failed)
FROM herald.endpoint_outcome_deltas WHERE endpoint_id = $1 GROUP BY hour ORDER BY hour`, endpointID)
	require.NoError(t, err)
	counts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return counts
}

func recordedOf(t *testing.T, pool *pgxpool.Pool, d loaded) recordedRow {
	t.Helper()
	var r recordedRow
	err := pool.QueryRow(context.Background(), `SELECT d.status, d.attempt_count, d.first_attempt_at, d.last_attempt_at,
    d.next_attempt_at, d.completed_at, d.last_status_code, d.last_error,
    a.attempt_number, a.trigger, a.started_at, a.duration_ms, a.request_headers::text, a.status_code, a.error,
    a.response_excerpt, a.outcome, a.message_id = $2, a.endpoint_id = $3
FROM herald.deliveries d JOIN herald.attempts a ON a.delivery_id = d.id
WHERE d.id = $1`, d.id, d.messageID, d.endpointID).Scan(&r.Status, &r.AttemptCount, &r.FirstAttemptAt, &r.LastAttemptAt,
		&r.NextAttemptAt, &r.CompletedAt, &r.LastStatusCode, &r.LastError,
		&r.AttemptNumber, &r.Trigger, &r.StartedAt, &r.DurationMS, &r.RequestHeaders, &r.StatusCode, &r.Error,
		&r.ResponseExcerpt, &r.Outcome, &r.OwnMessage, &r.OwnEndpoint)
	require.NoError(t, err)
	for _, at := range []*time.Time{r.FirstAttemptAt, r.LastAttemptAt, r.NextAttemptAt, r.CompletedAt, &r.StartedAt} {
		if at != nil {
			*at = at.UTC()
		}
	}
	return r
}

// An attempt recorded with others (recordAttempts, from arrays) leaves the
// same delivery and attempt rows as the same attempt recorded alone
// (recordAttempt, from one row of parameters): both go through apply, and
// the two statements differ only in how their input arrives.
func TestBatchedAndSingleAttemptsAreRecordedAlike(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	attemptWith := func(res Result, excerpt string) attempt {
		return attempt{
			startedAt: started,
			duration:  42 * time.Millisecond,
			headers:   map[string]string{"webhook-id": "msg_x", "webhook-signature": "v1,abc"},
			result:    res,
			excerpt:   excerpt,
		}
	}
	ended := started.Add(42 * time.Millisecond)
	code := func(n int) *int { return &n }

	t.Run("success", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		w, pool, ds := setupRecording(t, 4)
		a := attemptWith(Result{StatusCode: 204}, "")
		// Together, through the successes' shared round trips.
		_, err := w.record(ctx, recording{d: ds[0], trigger: TriggerManual, a: a},
			recording{d: ds[1], trigger: TriggerManual, a: a}, recording{d: ds[2], trigger: TriggerManual, a: a})
		require.NoError(t, err)
		next, err := w.recordAlone(ctx, recording{d: ds[3], trigger: TriggerManual, a: a})
		require.NoError(t, err)
		require.Zero(t, next, "no retry after a success")

		alone := recordedOf(t, pool, ds[3])
		require.Equal(t, recordedRow{
			Status: "succeeded", AttemptCount: 1, FirstAttemptAt: &started, LastAttemptAt: &started,
			CompletedAt: &ended, LastStatusCode: code(204),
			AttemptNumber: 1, Trigger: "manual", StartedAt: started, DurationMS: 42,
			RequestHeaders: `{"webhook-id": "msg_x", "webhook-signature": "v1,abc"}`, StatusCode: code(204),
			Outcome: "succeeded", OwnMessage: true, OwnEndpoint: true,
		}, alone)
		for _, d := range ds[:3] {
			require.Equal(t, alone, recordedOf(t, pool, d), "delivery %s, recorded with others", d.id)
		}
		var lastSuccess time.Time
		require.NoError(t, pool.QueryRow(ctx, "SELECT last_success_at FROM herald.endpoints WHERE id = $1", ds[0].endpointID).Scan(&lastSuccess))
		require.Equal(t, ended, lastSuccess.UTC(), "the endpoint heard of its successes")
		require.Equal(t, []string{"2026-12-02 12:00 4 0"}, outcomeCounts(t, pool, ds[0].endpointID),
			"the attempts are counted in their hour as they are recorded")
	})

	t.Run("retry", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		w, pool, ds := setupRecording(t, 4)
		a := attemptWith(Result{StatusCode: 500}, "oops")
		together, err := w.apply(ctx, []recording{{d: ds[2], a: a, trigger: TriggerScheduled}, {d: ds[0], a: a, trigger: TriggerScheduled},
			{d: ds[1], a: a, trigger: TriggerScheduled}})
		require.NoError(t, err)
		require.Equal(t, []applied{{true, ended}, {true, ended}, {true, ended}}, together, "results in the order of the attempts")
		next, err := w.record(ctx, recording{d: ds[3], trigger: TriggerScheduled, a: a})
		require.NoError(t, err)
		require.Equal(t, []time.Time{ended}, next)

		problem := "HTTP 500 Internal Server Error"
		alone := recordedOf(t, pool, ds[3])
		require.Equal(t, recordedRow{
			Status: "pending", AttemptCount: 1, FirstAttemptAt: &started, LastAttemptAt: &started, NextAttemptAt: &ended,
			LastStatusCode: code(500), LastError: &problem,
			AttemptNumber: 1, Trigger: "scheduled", StartedAt: started, DurationMS: 42,
			RequestHeaders: `{"webhook-id": "msg_x", "webhook-signature": "v1,abc"}`, StatusCode: code(500), Error: &problem,
			ResponseExcerpt: "oops", Outcome: "retry", OwnMessage: true, OwnEndpoint: true,
		}, alone)
		for _, d := range ds[:3] {
			require.Equal(t, alone, recordedOf(t, pool, d), "delivery %s, recorded with others", d.id)
		}
		require.Equal(t, []string{"2026-12-02 12:00 0 4"}, outcomeCounts(t, pool, ds[0].endpointID),
			"a retry counts as a failed attempt")
	})
}

// A delivery that changed since its attempt's outcome was decided is not
// recorded with the others, nor is a second attempt of one delivery; both
// are left to their callers, who decide again.
func TestApplySkipsChangedAndRepeatedDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, pool, ds := setupRecording(t, 3)
	_, err := pool.Exec(ctx, "UPDATE herald.deliveries SET attempt_count = 1 WHERE id = $1", ds[1].id)
	require.NoError(t, err)

	a := attempt{startedAt: time.Now().UTC().Truncate(time.Microsecond), result: Result{StatusCode: 200}}
	s := TriggerScheduled
	res, err := w.apply(ctx, []recording{{d: ds[0], trigger: s, a: a}, {d: ds[1], trigger: s, a: a}, {d: ds[2], trigger: s, a: a}, {d: ds[0], trigger: s, a: a}})
	require.NoError(t, err)
	require.Equal(t, []applied{{recorded: true}, {}, {recorded: true}, {}}, res)

	var attempts int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM herald.attempts").Scan(&attempts))
	require.Equal(t, 2, attempts, "one attempt row per recorded delivery")
	hour := a.startedAt.Truncate(time.Hour).Format("2006-01-02 15:04")
	require.Equal(t, []string{hour + " 2 0"}, outcomeCounts(t, pool, ds[0].endpointID), "counted as many as recorded")
}
