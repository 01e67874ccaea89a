package receivercheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/sanitize"
)

// Kind is the River job kind of Args.
const Kind = "herald.receiver_check"

// Args is the job that sends a check's steps.
type Args struct {
	CheckID uuid.UUID `json:"check_id"`
}

// Kind returns Kind.
func (Args) Kind() string { return Kind }

// InsertOpts runs checks on the delivery queue, so every dispatcher works
// them.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: delivery.Queue, MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Sender sends one request as a delivery's attempt would be sent;
// *delivery.Worker is one.
type Sender interface {
	Probe(ctx context.Context, endpointID uuid.UUID, url string, messageID uuid.UUID, body []byte) delivery.ProbeResult
	// JobTimeout bounds a job of one request.
	JobTimeout() time.Duration
}

// DB is what the worker needs of Postgres; a *pgxpool.Pool is one.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Worker is the River worker of Args. Each run of a job sends the next
// pending step and saves its answers, then snoozes for no time so the
// next run takes the following step: a run never lasts longer than one
// step's requests, and a run cut short resends only its own step.
type Worker struct {
	river.WorkerDefaults[Args]
	db     DB
	sender Sender
	logger *slog.Logger
}

// NewWorker returns a Worker sending through sender. A nil logger means
// slog.Default().
func NewWorker(db DB, sender Sender, logger *slog.Logger) *Worker {
	if logger == nil {
		logger = slog.Default()
	}
	return &Worker{db: db, sender: sender, logger: logger}
}

// Timeout lets a run send its longest step, ShuffledVersions requests one
// after the other, each within the sender's HTTP timeout (half its
// JobTimeout), with one timeout to spare: 90 s with the dispatcher's
// defaults, below its RescueStuckJobsAfter (3 min).
func (w *Worker) Timeout(*river.Job[Args]) time.Duration {
	return (ShuffledVersions + 1) * w.sender.JobTimeout() / 2
}

// Work sends the check's next pending step.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	id := job.Args.CheckID
	var (
		endpointID uuid.UUID
		status     string
		raw        []byte
		url        string
		enabled    bool
		steps      []Step
	)
	err := w.db.QueryRow(ctx, selectWork, id).Scan(&endpointID, &status, &raw, &url, &enabled)
	if errors.Is(err, pgx.ErrNoRows) || status == StatusCompleted {
		return nil // deleted with its endpoint, or done
	}
	if err != nil {
		return fmt.Errorf("receiver check %s: %w", id, err)
	}
	if err := json.Unmarshal(raw, &steps); err != nil {
		return river.JobCancel(fmt.Errorf("receiver check %s: its steps: %w", id, err))
	}
	next := -1
	for i, s := range steps {
		if s.Status == StepPending {
			next = i
			break
		}
	}
	if next < 0 {
		return w.save(ctx, id, steps, completeCheck)
	}
	step := &steps[next]
	if !enabled {
		for i := next; i < len(steps); i++ {
			if steps[i].Status == StepPending {
				steps[i].Status, steps[i].Note = StepSkipped, "The endpoint was disabled while the check ran."
			}
		}
		return w.save(ctx, id, steps, completeCheck)
	}
	bodies, err := w.bodies(ctx, step.Sends)
	if err != nil {
		return fmt.Errorf("receiver check %s: %w", id, err)
	}
	if step.Name == StepConcurrent {
		var wg sync.WaitGroup
		for i := range step.Sends {
			wg.Go(func() { w.send(ctx, endpointID, url, &step.Sends[i], bodies) })
		}
		wg.Wait()
	} else {
		for i := range step.Sends {
			w.send(ctx, endpointID, url, &step.Sends[i], bodies)
		}
	}
	step.Status = StepSucceeded
	for _, s := range step.Sends {
		if s.StatusCode < 200 || s.StatusCode > 299 {
			step.Status = StepFailed
		}
	}
	if next == len(steps)-1 {
		return w.save(ctx, id, steps, completeCheck)
	}
	if err := w.save(ctx, id, steps, saveSteps); err != nil {
		return err
	}
	return river.JobSnooze(0)
}

func (w *Worker) bodies(ctx context.Context, sends []Send) (map[uuid.UUID][]byte, error) {
	ids := make([]uuid.UUID, 0, len(sends))
	for _, s := range sends {
		ids = append(ids, s.MessageID)
	}
	rows, err := w.db.Query(ctx, selectBodies, ids)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID][]byte{}
	var (
		id   uuid.UUID
		body string
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &body}, func() error {
		out[id] = []byte(body)
		return nil
	})
	return out, err
}

func (w *Worker) send(ctx context.Context, endpointID uuid.UUID, url string, s *Send, bodies map[uuid.UUID][]byte) {
	body, ok := bodies[s.MessageID]
	if !ok {
		s.Error = "the event is no longer stored, so it could not be sent"
		return
	}
	r := w.sender.Probe(ctx, endpointID, url, s.MessageID, body)
	sent := r.StartedAt.UTC()
	s.SentAt, s.DurationMS, s.StatusCode = &sent, r.Duration.Milliseconds(), r.StatusCode
	s.Response = sanitize.Text(r.Excerpt, maxExcerpt)
	if r.Err != nil {
		s.Error = sanitize.Text(r.Err.Error(), maxExcerpt)
	}
}

func (w *Worker) save(ctx context.Context, id uuid.UUID, steps []Step, query string) error {
	raw, err := json.Marshal(steps)
	if err != nil {
		return fmt.Errorf("receiver check %s: %w", id, err)
	}
	if _, err := w.db.Exec(ctx, query, id, raw); err != nil {
		return fmt.Errorf("receiver check %s: save its answers: %w", id, err)
	}
	return nil
}
