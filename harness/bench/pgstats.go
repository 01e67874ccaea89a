package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// writes is a reading of what Postgres has written.
type writes struct {
	inserted, updated, deleted int64
	walLSN                     string
	storedBytes                int64
}

func readWrites(ctx context.Context, conn *pgx.Conn) (writes, error) {
	var w writes
	err := conn.QueryRow(ctx, databaseWrites).Scan(&w.inserted, &w.updated, &w.deleted, &w.walLSN, &w.storedBytes)
	if err != nil {
		return writes{}, fmt.Errorf("read database statistics: %w", err)
	}
	return w, nil
}

// Writes is what Postgres wrote during a run.
type Writes struct {
	// Inserted, Updated and Deleted are rows of this database
	// (pg_stat_database).
	Inserted int64 `json:"rows_inserted"`
	Updated  int64 `json:"rows_updated"`
	Deleted  int64 `json:"rows_deleted"`
	// WALBytes is the WAL the whole server wrote (pg_current_wal_lsn):
	// other databases' writes during the run count too.
	WALBytes int64 `json:"wal_bytes"`
	// StoredBytes is how much Herald's tables (River's included) grew,
	// indexes and TOAST included.
	StoredBytes int64 `json:"stored_bytes"`
}

// Rows is every row written.
func (w Writes) Rows() int64 { return w.Inserted + w.Updated + w.Deleted }

func writesBetween(ctx context.Context, conn *pgx.Conn, before, after writes) (Writes, error) {
	var wal int64
	if err := conn.QueryRow(ctx, walBytesBetween, before.walLSN, after.walLSN).Scan(&wal); err != nil {
		return Writes{}, fmt.Errorf("WAL written: %w", err)
	}
	return Writes{
		Inserted:    after.inserted - before.inserted,
		Updated:     after.updated - before.updated,
		Deleted:     after.deleted - before.deleted,
		WALBytes:    wal,
		StoredBytes: after.storedBytes - before.storedBytes,
	}, nil
}

// waitAlone waits until conn is the only connection to its database, so
// that every other session's row counters have been published.
func waitAlone(ctx context.Context, conn *pgx.Conn, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var n int
		if err := conn.QueryRow(ctx, otherSessions).Scan(&n); err != nil {
			return fmt.Errorf("count sessions: %w", err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d other sessions are still connected to the bench database after %s; their writes may be missing from the statistics", n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// backendCPU is the CPU time of the server processes serving the other
// connections to conn's database, read from /proc (Postgres runs on this
// machine). Call it before those connections close: a backend's time is
// gone with its process.
func backendCPU(ctx context.Context, conn *pgx.Conn) (time.Duration, error) {
	rows, err := conn.Query(ctx, sessionPIDs)
	if err != nil {
		return 0, fmt.Errorf("list Postgres backends: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, fmt.Errorf("list Postgres backends: %w", err)
	}
	var total time.Duration
	for _, pid := range pids {
		u, err := processUsage(int(pid))
		if err != nil {
			continue // exited meanwhile, or Postgres runs elsewhere
		}
		total += u.CPU
	}
	return total, nil
}
