package receiver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ApplyIfNewer is the version guard: it records version as the latest
// applied version of the object (source, objectID) and reports newer ==
// true, or leaves the record alone and reports false when a version at
// least as high is already recorded. Call it inside tx, the transaction of
// the update, and apply the update only when newer is true; otherwise the
// event is stale and is done with (let the Worker mark it processed).
//
// An equal version is not newer: it is the same update again. Concurrent
// callers for one object are ordered by a row lock, so out of any set of
// updates, whatever their arrival order, only increasing versions are
// applied and the last one standing is the highest. Timestamps cannot do
// this: two updates created in the same second compare equal.
//
// The versions live in webhook_inbox.object_versions, which Prune never
// shortens. If the consumer's own table has a version column, the same
// guard is one statement on it and needs no extra table:
//
//	UPDATE accounts SET plan = $2, plan_version = $3
//	WHERE id = $1 AND plan_version < $3
//
// where zero rows updated means the event was stale.
//
// objectID must not be empty and version must be positive: events without
// an object or a version (Event.Version 0) cannot be ordered this way.
func ApplyIfNewer(ctx context.Context, tx pgx.Tx, source, objectID string, version int64) (newer bool, err error) {
	if source == "" || objectID == "" {
		return false, errors.New("apply if newer: source and object ID must not be empty; events without an object cannot be ordered by version")
	}
	if version < 1 {
		return false, fmt.Errorf("apply if newer %s/%s: version %d must be positive; an event without object.version cannot be ordered by version", source, objectID, version)
	}
	err = tx.QueryRow(ctx, upsertObjectVersion, source, objectID, version).Scan(&newer)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("apply if newer %s/%s v%d: %w", source, objectID, version, err)
	}
	return newer, nil
}
