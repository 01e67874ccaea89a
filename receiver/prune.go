package receiver

import (
	"context"
	"errors"
	"fmt"
	"time"
)

const (
	// DefaultRetention is how long Prune keeps dedupe keys by default: 30
	// days, as long as the longest manual resend window in common use
	// (Stripe's CLI resends events up to 30 days old).
	DefaultRetention = 30 * 24 * time.Hour

	// MinRetention is the shortest retention Prune accepts: 7 days.
	MinRetention = 7 * 24 * time.Hour
)

// ErrRetentionTooShort is returned by Prune and NewWorker for a retention
// below MinRetention.
var ErrRetentionTooShort = errors.New("retention too short")

// pruneBatchSize bounds the rows one DELETE removes.
const pruneBatchSize = 5000

// Prune deletes dedupe keys older than retention: processed inbox events
// received before now − retention, and Claim keys taken before it. Events
// not yet processed and dead letters are never deleted, nor are the
// versions of ApplyIfNewer. It returns how many rows it deleted.
//
// retention defaults to 30 days (DefaultRetention); zero means the
// default. A retention below 7 days (MinRetention) is refused with an error
// wrapping ErrRetentionTooShort: senders retry for days (Herald for 3, the
// Standard Webhooks example schedule for over 75 hours) and people resend
// by hand for weeks, and a copy that arrives after its key was pruned is
// applied a second time.
//
// Run it periodically: a Worker does so hourly by default (see
// WorkerConfig.PruneInterval), or call it from a cron job of your own.
func Prune(ctx context.Context, db DB, retention time.Duration) (deleted int64, err error) {
	retention, err = checkRetention(retention)
	if err != nil {
		return 0, err
	}
	for _, query := range []string{pruneEvents, pruneClaims} {
		for {
			tag, err := db.Exec(ctx, query, retention.Seconds(), pruneBatchSize)
			if err != nil {
				return deleted, fmt.Errorf("prune keys older than %s: %w", retention, err)
			}
			deleted += tag.RowsAffected()
			if tag.RowsAffected() < pruneBatchSize {
				break
			}
		}
	}
	return deleted, nil
}

func checkRetention(retention time.Duration) (time.Duration, error) {
	if retention == 0 {
		return DefaultRetention, nil
	}
	if retention < MinRetention {
		return 0, fmt.Errorf("%w: %s is below the %s minimum; senders retry for days and manual resends arrive weeks later, "+
			"so a key pruned sooner lets a late copy be applied twice (the default is %s)",
			ErrRetentionTooShort, retention, MinRetention, DefaultRetention)
	}
	return retention, nil
}
