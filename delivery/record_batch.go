package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
)

// success is a successful attempt waiting to be recorded with others.
type success struct {
	d       loaded
	trigger Trigger
	a       attempt
}

// recordSuccess records a successful attempt of d together with the
// successes other workers are recording at the same time: one statement and
// one commit for all of them, where recording them one by one costs a
// transaction each. It reports false when the delivery changed since it was
// loaded (or the shared transaction failed); the caller then records the
// attempt alone, with record.
func (w *Worker) recordSuccess(ctx context.Context, d loaded, trigger Trigger, a attempt) bool {
	recorded, err := w.successes.Do(ctx, success{d: d, trigger: trigger, a: a})
	if err != nil {
		w.logger.WarnContext(ctx, "recording successes together failed; recording alone", "delivery", d.id, "error", err)
		return false
	}
	return recorded
}

// recordSuccesses is the batcher's flush: it records every success still
// valid in one transaction, with the endpoints' health, and reports which.
func (w *Worker) recordSuccesses(ctx context.Context, batch []success) ([]bool, error) {
	// Rows are locked in id order, so concurrent batches cannot deadlock.
	order := make([]int, len(batch))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return compareUUID(batch[i].d.id, batch[j].d.id) })

	// A delivery appears once: a second attempt of it (a resend running
	// alongside) is recorded alone, after this one.
	seen := make(map[uuid.UUID]bool, len(batch))
	order = slices.DeleteFunc(order, func(i int) bool {
		if seen[batch[i].d.id] {
			return true
		}
		seen[batch[i].d.id] = true
		return false
	})

	n := len(order)
	var (
		deliveryIDs = make([]uuid.UUID, 0, n)
		seenStatus  = make([]string, 0, n)
		seenCounts  = make([]int, 0, n)
		started     = make([]time.Time, 0, n)
		ended       = make([]time.Time, 0, n)
		durations   = make([]int64, 0, n)
		statusCodes = make([]int, 0, n)
		attemptIDs  = make([]uuid.UUID, 0, n)
		messageIDs  = make([]uuid.UUID, 0, n)
		endpointIDs = make([]uuid.UUID, 0, n)
		triggers    = make([]string, 0, n)
		headers     = make([]string, 0, n)
		excerpts    = make([]string, 0, n)
	)
	for _, i := range order {
		s := batch[i]
		attemptID, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("attempt id: %w", err)
		}
		h, err := json.Marshal(cmpOrEmpty(s.a.headers))
		if err != nil {
			return nil, fmt.Errorf("attempt headers: %w", err)
		}
		deliveryIDs = append(deliveryIDs, s.d.id)
		seenStatus = append(seenStatus, string(deliverystatus.Pending))
		seenCounts = append(seenCounts, s.d.attemptCount)
		started = append(started, s.a.startedAt)
		ended = append(ended, s.a.startedAt.Add(s.a.duration))
		durations = append(durations, s.a.duration.Milliseconds())
		statusCodes = append(statusCodes, s.a.result.StatusCode)
		attemptIDs = append(attemptIDs, attemptID)
		messageIDs = append(messageIDs, s.d.messageID)
		endpointIDs = append(endpointIDs, s.d.endpointID)
		triggers = append(triggers, string(s.trigger))
		headers = append(headers, string(h))
		excerpts = append(excerpts, s.a.excerpt)
	}

	tx, err := w.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("record %d successes: %w", n, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, lookUpByIndex); err != nil {
		return nil, fmt.Errorf("record %d successes: %w", n, err)
	}
	rows, err := tx.Query(ctx, recordSuccesses, deliveryIDs, seenStatus, seenCounts, started, ended, durations, statusCodes,
		attemptIDs, messageIDs, endpointIDs, triggers, headers, excerpts, string(Succeeded))
	if err != nil {
		return nil, fmt.Errorf("record %d successes: %w", n, err)
	}
	recordedIDs, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("record %d successes: %w", n, err)
	}
	recorded := make(map[uuid.UUID]bool, len(recordedIDs))
	for _, id := range recordedIDs {
		recorded[id] = true
	}

	// Each endpoint's health learns of its latest success, once per batch,
	// endpoints in id order (the health tracker may lock their rows).
	latest := make(map[uuid.UUID]time.Time)
	for _, i := range order {
		s := batch[i]
		if end := s.a.startedAt.Add(s.a.duration); recorded[s.d.id] && end.After(latest[s.d.endpointID]) {
			latest[s.d.endpointID] = end
		}
	}
	endpoints := make([]uuid.UUID, 0, len(latest))
	for id := range latest {
		endpoints = append(endpoints, id)
	}
	slices.SortFunc(endpoints, compareUUID)
	for _, id := range endpoints {
		if err := w.health.Succeeded(ctx, tx, id, latest[id]); err != nil {
			return nil, fmt.Errorf("endpoint %s health after %d successes: %w", id, n, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("record %d successes: %w", n, err)
	}

	out := make([]bool, len(batch))
	for _, i := range order {
		s := batch[i]
		if out[i] = recorded[s.d.id]; out[i] {
			w.log(ctx, s.d, s.d.attemptCount+1, Outcome{Verdict: Succeeded})
		}
	}
	return out, nil
}

func compareUUID(a, b uuid.UUID) int {
	return slices.Compare(a[:], b[:])
}

// cmpOrEmpty is headers, or an empty map for none (the column is NOT NULL).
func cmpOrEmpty(headers map[string]string) map[string]string {
	if headers == nil {
		return map[string]string{}
	}
	return headers
}
