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
