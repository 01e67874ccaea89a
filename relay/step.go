package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/unnest"
)

// message is one row of a source's outbox, as claimed.
type message struct {
	id             uuid.UUID
	tenantID       string
	eventType      string
	objectID       string
	objectVersion  int64
	body           string
	idempotencyKey *string
	createdAt      time.Time
	traceparent    *string
	channels       []string
}

// messageColumns are insertRelayed's $2 to $10, in order.
var messageColumns = []unnest.Column[message]{
	unnest.Col(func(m message) uuid.UUID { return m.id }),
	unnest.Col(func(m message) string { return m.tenantID }),
	unnest.Col(func(m message) string { return m.eventType }),
	unnest.Col(func(m message) string { return m.objectID }),
	unnest.Col(func(m message) int64 { return m.objectVersion }),
	unnest.Col(func(m message) string { return m.body }),
	unnest.Col(func(m message) *string { return m.idempotencyKey }),
	unnest.Col(func(m message) time.Time { return m.createdAt }),
	unnest.Col(func(m message) *string { return m.traceparent }),
}

// rollbackTimeout bounds rolling back a step's transaction: one round
// trip, after the step's own deadline may have passed.
const rollbackTimeout = 5 * time.Second

// marking is a batch Herald has committed whose mark on the source is
// committing in the background: its source transaction still holds the
// batch's row locks, so no claim takes it meanwhile.
type marking struct {
	// relayed are the batch's messages Herald has (not the refused ones).
	relayed []uuid.UUID
	// done is closed once the mark committed or failed.
	done chan struct{}
}

// wait waits for m's mark, if any, to end.
func (m *marking) wait() {
	if m != nil {
		<-m.done
	}
}

// step relays one batch from s: claim on the source, insert into Herald
// and commit, then hand the source's transaction to a goroutine that
// marks the batch and commits (see the package doc), and return. prev is
// the previous step's mark, which may still be committing: its batch is
// locked until then, so the claim skips it, and its relayed messages
// count as in Herald when the claim holds back a version whose lower
// version waits (see claimOutbox). step waits for prev before handing
// over its own mark, so a source has at most one mark committing and two
// of its connections in use. It returns how many messages it claimed,
// how many of them it relayed or refused (the others were held back),
// and its mark (nil if it moved nothing). A claim of less than the batch
// size means the source's outbox was drained; a claim may take up to
// twice the batch size.
func (r *Relay) step(ctx context.Context, s Source, prev *marking) (claimed, moved int, next *marking, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.stepTimeout)
	defer cancel()
	stx, err := s.Pool.Begin(ctx)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("begin on the source: %w", err)
	}
	handedOver := false
	defer func() {
		if !handedOver {
			rollback(ctx, stx)
		}
	}()
	inHerald := []uuid.UUID{}
	if prev != nil {
		inHerald = prev.relayed
	}
	rows, err := stx.Query(ctx, claimOutbox, r.batchSize, inHerald)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("claim on the source: %w", err)
	}
	var (
		batch []message
		m     message
		held  bool
	)
	_, err = pgx.ForEachRow(rows, []any{&m.id, &m.tenantID, &m.eventType, &m.objectID, &m.objectVersion, &m.body,
		&m.idempotencyKey, &m.createdAt, &m.traceparent, &m.channels, &held}, func() error {
		claimed++
		if !held {
			batch = append(batch, m)
		}
		return nil
	})
	if err != nil {
		return 0, 0, nil, fmt.Errorf("claim on the source: %w", err)
	}
	if len(batch) == 0 {
		return claimed, 0, nil, nil
	}

	refused, err := r.insert(ctx, s.Name, batch)
	if err != nil {
		return 0, 0, nil, err
	}
	ids := make([]uuid.UUID, 0, len(batch))
	for _, m := range batch {
		if _, no := refused[m.id]; !no {
			ids = append(ids, m.id)
		}
	}
	prev.wait()
	next = &marking{relayed: ids, done: make(chan struct{})}
	handedOver = true
	go func() {
		defer close(next.done)
		r.mark(ctx, s.Name, stx, ids, refused)
	}()
	return claimed, len(batch), next, nil
}

// mark runs after Herald's commit: it marks the relayed messages (ids)
// and the refused ones on the source in stx, the transaction that claimed
// them, and commits it, within its own StepTimeout (the step's context
// may have ended: a mark runs to its end even when the relay stops). A
// failure is logged: the batch stays unmarked and the next claim relays
// it again, inserting nothing twice.
func (r *Relay) mark(ctx context.Context, source string, stx pgx.Tx, ids []uuid.UUID, refused map[uuid.UUID]string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.stepTimeout)
	defer cancel()
	defer rollback(ctx, stx)
	if r.afterHeraldCommit != nil {
		if err := r.afterHeraldCommit(source, ids); err != nil {
			r.logger.ErrorContext(ctx, "relay from the source: stopped before the mark", "source", source, "error", err)
			return
		}
	}
	refusedIDs := make([]uuid.UUID, 0, len(refused))
	problems := make([]string, 0, len(refused))
	for id, problem := range refused {
		refusedIDs = append(refusedIDs, id)
		problems = append(problems, problem)
		r.logger.ErrorContext(ctx, "Herald refused a message of the source; it stays there, marked refused",
			"source", source, "message_id", id, "problem", problem)
	}
	var b pgx.Batch
	b.Queue(markWithoutFlush)
	b.Queue(markRelayed, ids, refusedIDs, problems)
	if err := stx.SendBatch(ctx, &b).Close(); err != nil {
		r.logger.ErrorContext(ctx, "mark relayed on the source (Herald has them; the next step relays them again, inserting nothing twice)",
			"source", source, "error", err)
		return
	}
	if err := stx.Commit(ctx); err != nil {
		r.logger.ErrorContext(ctx, "commit on the source (Herald has them; the next step relays them again, inserting nothing twice)",
			"source", source, "error", err)
	}
}

// insert inserts batch into Herald's messages and wakes the fan-out in
// one round trip: the two statements go as one batch, which Postgres runs
// as one implicit transaction and commits before it answers the batch's
// end. It returns the messages Herald refused, with why, once that commit
// is done.
func (r *Relay) insert(ctx context.Context, source string, batch []message) (map[uuid.UUID]string, error) {
	channels := make([][]string, len(batch))
	ids := make([]uuid.UUID, len(batch))
	for i, m := range batch {
		channels[i] = m.channels
		ids[i] = m.id
	}
	channelsJSON, err := json.Marshal(channels)
	if err != nil {
		return nil, fmt.Errorf("encode channels: %w", err)
	}
	args := append([]any{source}, unnest.Arrays(batch, messageColumns...)...)
	args = append(args, channelsJSON)

	var b pgx.Batch
	b.Queue(insertRelayed, args...)
	b.Queue(wakeFanOut, ids)
	br := r.pool.SendBatch(ctx, &b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("insert into Herald's messages: %w", err)
	}
	refused := map[uuid.UUID]string{}
	var (
		id      uuid.UUID
		problem string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &problem}, func() error {
		refused[id] = problem
		return nil
	}); err != nil {
		return nil, fmt.Errorf("insert into Herald's messages: %w", err)
	}
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("wake the fan-out: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("commit in Herald's database: %w", err)
	}
	return refused, nil
}

// rollback rolls tx back, if it has not ended, within rollbackTimeout.
func rollback(ctx context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_ = tx.Rollback(ctx)
}
