package ratelimit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// MetadataKey is the River job metadata key under which a snoozed delivery
// keeps the slot it reserved (an RFC 3339 time).
const MetadataKey = "herald_rate_slot"

// Admit decides, inside a River worker's Work, whether job may deliver to
// endpoint now. It returns nil to go ahead, or the river.JobSnooze error the
// worker must return so that the job sleeps until its slot. A job that
// already reserved a slot (on any replica) keeps it: it goes ahead once the
// slot has come, and is snoozed again, without reserving, if it woke early.
// perSecond zero or negative means no limit.
func (l *Limiter) Admit(ctx context.Context, job *rivertype.JobRow, endpoint uuid.UUID, perSecond float64) error {
	now := l.Now()
	if slot, ok := reservedSlot(job.Metadata); ok {
		if wait := slot.Sub(now); wait > 0 {
			return river.JobSnooze(wait)
		}
		// The slot is used now; clear it so a later retry reserves anew.
		if err := river.MetadataSet(ctx, MetadataKey, nil); err != nil {
			return fmt.Errorf("rate limit: clear reserved slot: %w", err)
		}
		return nil
	}
	if perSecond <= 0 {
		return nil
	}
	slot := l.Reserve(endpoint, perSecond, now)
	wait := slot.Sub(now)
	if wait <= 0 {
		return nil
	}
	if err := river.MetadataSet(ctx, MetadataKey, slot.UTC().Format(time.RFC3339Nano)); err != nil {
		return fmt.Errorf("rate limit: record reserved slot: %w", err)
	}
	return river.JobSnooze(wait)
}

func reservedSlot(metadata []byte) (time.Time, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return time.Time{}, false
	}
	var value string
	if json.Unmarshal(m[MetadataKey], &value) != nil || value == "" {
		return time.Time{}, false
	}
	slot, err := time.Parse(time.RFC3339Nano, value)
	return slot, err == nil
}
