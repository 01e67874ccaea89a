// Package historyid makes the ids of a message's history rows.
//
// History (messages, deliveries, attempts, replay records) is partitioned by
// ranges of UUIDv7 ids, that is by time (migrations/0024_history_partitions.sql).
// For a message's whole history to live in the partitions of the message's
// time, and be dropped together, a delivery's id carries its message id's
// 48 bits of milliseconds and an attempt's its delivery's: Child makes such
// an id. Its other 74 bits are random, as in any UUIDv4 or UUIDv7, so ids
// remain unique however many children share a millisecond.
package historyid

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Child returns a new UUIDv7 whose timestamp (its first 48 bits) is
// parent's and whose remaining bits are random. It fails only when the
// system's random source does.
func Child(parent uuid.UUID) (uuid.UUID, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return uuid.Nil, fmt.Errorf("history id: %w", err)
	}
	copy(id[:6], parent[:6])
	id[6] = 0x70 | id[6]&0x0f // version 7; NewRandom set the RFC 9562 variant
	return id, nil
}

// Bound returns the smallest UUIDv7 of at's millisecond, as
// herald.history_bound does: every id made in that millisecond or later
// is at least Bound(at), every one made before is less.
func Bound(at time.Time) uuid.UUID {
	var id uuid.UUID
	ms := uint64(at.UnixMilli())
	for i := range 6 {
		id[i] = byte(ms >> (40 - 8*i))
	}
	return id
}

// Time returns the millisecond a UUIDv7 was made in, as
// herald.history_time does.
func Time(id uuid.UUID) time.Time {
	var ms int64
	for _, b := range id[:6] {
		ms = ms<<8 | int64(b)
	}
	return time.UnixMilli(ms)
}
