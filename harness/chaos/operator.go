package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/store"
)

// operator does during a run what Herald's users and operators do, through
// the same packages the API and the portal call: enable an endpoint and
// replay it, resend deliveries, and (as an operator's mistake or a bug
// would) end delivery jobs that still had work to do.
type operator struct {
	pool  *pgxpool.Pool
	store *store.Store
	jobs  *river.Client[pgx.Tx] // inserts only: no queues
}

func newOperator(pool *pgxpool.Pool, st *store.Store) (*operator, error) {
	jobs, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: migrations.Schema})
	if err != nil {
		return nil, fmt.Errorf("operator: River client: %w", err)
	}
	return &operator{pool: pool, store: st, jobs: jobs}, nil
}

// waitingDelivery is a pending delivery whose job waits for its retry.
type waitingDelivery struct {
	job        int64
	delivery   uuid.UUID
	message    uuid.UUID
	webhookID  string
	endpointID uuid.UUID
	// resentAt is when a resend of the delivery committed (zero if it was
	// not resent): an attempt in flight then is fenced out, not recorded.
	resentAt time.Time
}

// lockWaiting locks, in tx, up to n delivery jobs of endpoint waiting for a
// retry, whose delivery is pending. A locked job is one River's fetch
// skips, so none of them starts an attempt before tx ends.
func lockWaiting(ctx context.Context, tx pgx.Tx, endpoint uuid.UUID, n int) ([]waitingDelivery, error) {
	rows, err := tx.Query(ctx, lockWaitingJobs, endpoint, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (waitingDelivery, error) {
		var w waitingDelivery
		err := row.Scan(&w.job, &w.delivery, &w.message, &w.endpointID)
		w.webhookID = delivery.MessageHeaderID(w.message)
		return w, err
	})
}

// resend resends up to n pending deliveries of endpoint, as a customer who
// has fixed their endpoint presses Resend: replay.ResendTx brings each
// one's next attempt forward to now. Deliveries with an attempt in flight
// are taken first: the resend's job must wait for that attempt to end (the
// check of attempts in flight at once holds it to that).
func (o *operator) resend(ctx context.Context, endpoint uuid.UUID, n int) ([]waitingDelivery, error) {
	var resent []waitingDelivery
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, selectResendable, endpoint, n)
		if err != nil {
			return fmt.Errorf("find pending deliveries: %w", err)
		}
		pending, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (waitingDelivery, error) {
			var w waitingDelivery
			err := row.Scan(&w.job, &w.delivery, &w.message, &w.endpointID)
			w.webhookID = delivery.MessageHeaderID(w.message)
			return w, err
		})
		if err != nil {
			return fmt.Errorf("find pending deliveries: %w", err)
		}
		for _, w := range pending {
			if _, err := replay.ResendTx(ctx, tx, o.jobs, w.message, w.endpointID); err != nil {
				return err
			}
		}
		resent = pending
		return nil
	})
	for i := range resent {
		resent[i].resentAt = time.Now()
	}
	return resent, err
}

// forceEnd ends up to n delivery jobs of endpoint waiting for a retry
// while their deliveries stay pending, alternately with River's JobCancel
// and with an UPDATE to discarded, as an operator in psql or a bug might;
// done counts the jobs ended before, so that the two ways alternate across
// calls. The reconciler must give each delivery a new job.
func (o *operator) forceEnd(ctx context.Context, endpoint uuid.UUID, n, done int) ([]forcedEnd, error) {
	var ended []forcedEnd
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		waiting, err := lockWaiting(ctx, tx, endpoint, n)
		if err != nil {
			return fmt.Errorf("find delivery jobs: %w", err)
		}
		ended = ended[:0]
		for i, w := range waiting {
			how := "cancelled with JobCancel"
			if (done+i)%2 == 0 {
				if _, err := o.jobs.JobCancelTx(ctx, tx, w.job); err != nil {
					return fmt.Errorf("cancel job %d: %w", w.job, err)
				}
			} else {
				how = "discarded with an UPDATE"
				if _, err := tx.Exec(ctx, discardJob, w.job); err != nil {
					return fmt.Errorf("discard job %d: %w", w.job, err)
				}
			}
			ended = append(ended, forcedEnd{waitingDelivery: w, how: how, at: time.Now()})
		}
		return nil
	})
	return ended, err
}

// forcedEnd is a delivery job the run ended by force.
type forcedEnd struct {
	waitingDelivery
	how string
	at  time.Time
}

// enableAndReplay enables endpoint, as its owner does once it answers
// again, and replays every delivery of the run that failed, was cancelled
// or was skipped while it was disabled (only_failed), as the API's POST
// …/replays does.
func (o *operator) enableAndReplay(ctx context.Context, endpoint uuid.UUID, since time.Time) (replay.Replay, error) {
	var r replay.Replay
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		if _, err := o.store.EnableEndpointTx(ctx, tx, endpoint); err != nil {
			return err
		}
		if _, err := replay.ResumeTx(ctx, tx, o.jobs, endpoint); err != nil {
			return err
		}
		var err error
		r, err = replay.StartTx(ctx, tx, o.jobs, replay.Params{EndpointID: endpoint, Since: since, OnlyFailed: true})
		return err
	})
	return r, err
}
