package receiver

import (
	"context"
	"fmt"
	"time"
)

// DeadLetter is an event whose attempts failed WorkerConfig.MaxAttempts
// times: the handler returned an error or panicked, or the process died
// while it handled the event alone. Workers no longer try it; it stays in the inbox, is never pruned, and runs
// again after Redrive.
type DeadLetter struct {
	Event
	// LastError is the error of the last attempt; it starts with "lease
	// lapsed" when the process handling the event died.
	LastError string
	// DeadAt is when the last attempt failed, or when a worker found that
	// its lease had lapsed.
	DeadAt time.Time
}

// DefaultDeadLetterLimit is how many dead letters ListDeadLetters returns
// when its limit is zero.
const DefaultDeadLetterLimit = 100

// ListDeadLetters returns up to limit dead letters, most recent first.
// limit defaults to 100; zero or negative means the default.
func ListDeadLetters(ctx context.Context, db DB, limit int) ([]DeadLetter, error) {
	if limit <= 0 {
		limit = DefaultDeadLetterLimit
	}
	rows, err := db.Query(ctx, selectDeadLetters, limit)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	defer rows.Close()
	var letters []DeadLetter
	for rows.Next() {
		var d DeadLetter
		if err := rows.Scan(&d.ID, &d.Source, &d.WebhookID, &d.Payload, &d.ReceivedAt, &d.Attempts, &d.LastError, &d.DeadAt); err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		// The Handler stores only payloads that decode. A row written some
		// other way that does not is still listed, with its raw Payload.
		_ = decodePayload(d.Payload, &d.Event)
		letters = append(letters, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return letters, nil
}

// Redrive makes the dead letter (source, webhookID) due again with its
// attempts reset to zero, typically after the bug that failed it is fixed.
// It reports false when no dead letter has that key.
func Redrive(ctx context.Context, db DB, source, webhookID string) (bool, error) {
	tag, err := db.Exec(ctx, redriveDeadLetter, source, webhookID)
	if err != nil {
		return false, fmt.Errorf("redrive %s/%s: %w", source, webhookID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RedriveAll makes every dead letter due again, like Redrive, and returns
// how many there were.
func RedriveAll(ctx context.Context, db DB) (int64, error) {
	tag, err := db.Exec(ctx, redriveAllDeadLetters)
	if err != nil {
		return 0, fmt.Errorf("redrive dead letters: %w", err)
	}
	return tag.RowsAffected(), nil
}
