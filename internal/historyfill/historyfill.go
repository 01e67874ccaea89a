// Package historyfill bulk-loads a plausible delivery history — messages,
// their deliveries, attempts, replay records, idempotency records and
// publish idempotency keys — into Herald's real schema with COPY, as fast as Postgres takes it. The
// aged benchmark fills millions of deliveries with it; the history-plan
// tests fill enough for the planner to prefer indexes.
//
// Rows go in in time order, one COPY per table, the tables in parallel.
// Ids are UUIDv7 of the message's time, as Herald makes them: a delivery's
// and an attempt's carry their message's (package historyid), so that a
// message's history shares its partitions. On a schema partitioned by time
// (migrations/0024_history_partitions.sql) the fill first creates the
// partitions of its span, a day each. Foreign-key
// triggers are skipped when the role may (session_replication_role =
// replica, superusers only): the filler writes consistent rows itself, and
// checking each one cost more than writing it. COPY into a partitioned
// parent routes rows to their partitions, so the fill works on either
// layout.
package historyfill

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"
)

// Stream is a share of the history that goes to an endpoint the caller
// created (the benchmark's, pointing at its receiver). Its deliveries all
// succeeded at the first attempt.
type Stream struct {
	TenantID   string
	EndpointID uuid.UUID
	// Deliveries is how many of the history's deliveries are this
	// endpoint's, spread over the whole span like the rest.
	Deliveries int
}

// Spec describes a history. The zero value is an empty history of 30 days
// ending now.
type Spec struct {
	// Deliveries is how many deliveries go to the filler's own tenants'
	// endpoints. Zero means none (and no tenants of its own).
	Deliveries int
	// Tenants is how many tenants the filler creates. Zero means 50.
	Tenants int
	// EndpointsPerTenant is how many endpoints each has. Zero means 4.
	EndpointsPerTenant int
	// Span is how far back the history reaches from End. Zero means 30 days.
	Span time.Duration
	// End is when the history ends. Zero means now.
	End time.Time
	// Streams are extra deliveries to the caller's endpoints.
	Streams []Stream
}

// Result says what was loaded and how long it took.
type Result struct {
	Messages, Deliveries, Attempts, Others int64
	// Load is the COPYs; Vacuum the VACUUM ANALYZE after them.
	Load, Vacuum time.Duration
	// Triggers is whether foreign-key triggers ran (the role could not
	// skip them).
	Triggers bool
}

// Rows is every row loaded.
func (r Result) Rows() int64 { return r.Messages + r.Deliveries + r.Attempts + r.Others }

func (s Spec) withDefaults() Spec {
	if s.Tenants <= 0 {
		s.Tenants = 50
	}
	if s.EndpointsPerTenant <= 0 {
		s.EndpointsPerTenant = 4
	}
	if s.Span <= 0 {
		s.Span = 30 * 24 * time.Hour
	}
	if s.End.IsZero() {
		s.End = time.Now()
	}
	return s
}

// Fill loads the history spec describes into pool's database, then runs
// VACUUM ANALYZE on the tables it filled, as autovacuum would have on a
// database that aged in service.
func Fill(ctx context.Context, pool *pgxpool.Pool, spec Spec) (Result, error) {
	spec = spec.withDefaults()
	h, err := newHistory(spec)
	if err != nil {
		return Result{}, err
	}
	var res Result
	start := time.Now()
	if err := h.insertOwners(ctx, pool); err != nil {
		return res, err
	}
	res.Triggers = !canSkipTriggers(ctx, pool)
	if err := createPartitions(ctx, pool, h.start, spec.End); err != nil {
		return res, err
	}

	g, gctx := errgroup.WithContext(ctx)
	tables := []struct {
		name    string
		columns []string
		rows    func(yield func([]any) bool)
		n       *int64
	}{
		{"messages", []string{"id", "tenant_id", "event_type", "object_id", "object_version", "body", "idempotency_key", "created_at", "dispatched_at"}, h.messages, &res.Messages},
		{"deliveries", []string{"id", "message_id", "endpoint_id", "tenant_id", "status", "attempt_count", "first_attempt_at", "last_attempt_at", "next_attempt_at", "completed_at", "last_status_code", "last_error", "created_at", "updated_at"}, h.deliveries, &res.Deliveries},
		{"attempts", []string{"id", "delivery_id", "message_id", "endpoint_id", "attempt_number", "trigger", "started_at", "duration_ms", "status_code", "error", "response_excerpt", "outcome"}, h.attempts, &res.Attempts},
		{"replay_deliveries", []string{"replay_id", "delivery_id"}, h.replayDeliveries, &res.Others},
	}
	var keys int64
	var idempotency int64
	for _, tbl := range tables {
		g.Go(func() error {
			n, err := copyTable(gctx, pool, !res.Triggers, tbl.name, tbl.columns, tbl.rows)
			*tbl.n = n
			return err
		})
	}
	g.Go(func() error {
		n, err := copyTable(gctx, pool, !res.Triggers, "idempotency_records", []string{"tenant_id", "key", "request_hash", "status_code", "response_body", "created_at"}, h.idempotencyRecords)
		idempotency = n
		return err
	})
	g.Go(func() error {
		n, err := copyTable(gctx, pool, !res.Triggers, "publish_idempotency_keys", []string{"tenant_id", "idempotency_key", "message_id", "object_version", "created_at"}, h.publishKeys)
		keys = n
		return err
	})
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Others += idempotency + keys + int64(len(h.endpoints)) + int64(len(h.replays))
	if _, err := pool.Exec(ctx, `UPDATE herald.replays r SET total = c.n, enqueued = c.n
FROM (SELECT replay_id, count(*)::int AS n FROM herald.replay_deliveries WHERE replay_id = ANY($1) GROUP BY replay_id) c
WHERE r.id = c.replay_id`, h.replayIDs()); err != nil {
		return res, fmt.Errorf("count the history's replays: %w", err)
	}
	res.Load = time.Since(start)

	start = time.Now()
	if err := unbounded(ctx, pool, `VACUUM (ANALYZE) herald.messages, herald.deliveries, herald.attempts, herald.replay_deliveries, herald.idempotency_records, herald.publish_idempotency_keys, herald.endpoints, herald.replays`); err != nil {
		return res, fmt.Errorf("vacuum the filled tables: %w", err)
	}
	res.Vacuum = time.Since(start)
	return res, nil
}

// createPartitions creates the partitions of history that cover [from, to]
// in days, when the schema is partitioned; before that migration it does
// nothing.
func createPartitions(ctx context.Context, pool *pgxpool.Pool, from, to time.Time) error {
	var partitioned bool
	if err := pool.QueryRow(ctx, `SELECT to_regproc('herald.create_history_partitions') IS NOT NULL`).Scan(&partitioned); err != nil {
		return fmt.Errorf("look for history partitioning: %w", err)
	}
	if !partitioned {
		return nil
	}
	if _, err := pool.Exec(ctx, `SELECT herald.create_history_partitions($1, $2, interval '1 day')`, from, to.Add(24*time.Hour)); err != nil {
		return fmt.Errorf("create the history's partitions: %w", err)
	}
	return nil
}

// unbounded runs sql without the pool's statement timeout, on a connection
// of its own.
func unbounded(ctx context.Context, pool *pgxpool.Pool, sql string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		return err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `RESET statement_timeout`) }()
	_, err = conn.Exec(ctx, sql)
	return err
}

// canSkipTriggers reports whether the role may set session_replication_role.
func canSkipTriggers(ctx context.Context, pool *pgxpool.Pool) bool {
	var super bool
	err := pool.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super)
	return err == nil && super
}

// copyTable COPYs rows into herald.<table> on a connection of its own.
func copyTable(ctx context.Context, pool *pgxpool.Pool, skipTriggers bool, table string, columns []string, rows func(yield func([]any) bool)) (int64, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	// A bulk load runs as long as its rows take, on a busy machine minutes:
	// the pool's statement timeout is for Herald's queries, not for it.
	if _, err := conn.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		return 0, fmt.Errorf("copy %s: %w", table, err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `RESET statement_timeout`) }()
	if skipTriggers {
		if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
			return 0, fmt.Errorf("copy %s: %w", table, err)
		}
		defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `RESET session_replication_role`) }()
	}
	next, stop := pull(rows)
	defer stop()
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"herald", table}, columns, &source{next: next})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return n, fmt.Errorf("copy %s: %s (%s)", table, pgErr.Message, pgErr.Detail)
		}
		return n, fmt.Errorf("copy %s: %w", table, err)
	}
	return n, nil
}

// source adapts a pulled sequence of rows to pgx.CopyFromSource.
type source struct {
	next func() ([]any, bool)
	row  []any
}

func (s *source) Next() bool {
	var ok bool
	s.row, ok = s.next()
	return ok
}
func (s *source) Values() ([]any, error) { return s.row, nil }
func (s *source) Err() error             { return nil }

// idAt is a UUIDv7 for time at whose other bits are the fill's nonce, a
// table tag and a sequence number: unique within a fill and across fills,
// and derived again for the rows that reference it without keeping millions
// of ids in memory.
func idAt(at time.Time, nonce uint32, tag byte, seq uint64) uuid.UUID {
	var u uuid.UUID
	ms := uint64(at.UnixMilli())
	binary.BigEndian.PutUint64(u[0:8], ms<<16)
	u[6] = 0x70 | tag&0x0f
	u[7] = byte(nonce >> 24)
	u[8] = 0x80 | byte(nonce>>16)&0x3f
	u[9] = byte(nonce >> 8)
	binary.BigEndian.PutUint16(u[10:12], uint16(nonce)<<8|uint16(seq>>32)&0xff)
	binary.BigEndian.PutUint32(u[12:16], uint32(seq))
	return u
}

func randomNonce() (uint32, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b[:]), nil
}
