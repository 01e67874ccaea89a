// Package historyplan checks that the queries Herald runs on history find
// their rows through an index. Each package that queries history lists
// its queries in a test (history_plans_test.go) and runs them through
// Check on a database cloned from Filled: enough history, vacuumed and
// analysed, that the planner reads a big table through an index whenever
// one serves the query. docs/history-queries.md lists the same queries with
// the index each uses.
package historyplan

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/historyfill"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations"
)

// HistoryTables are the tables that grow with traffic. A sequential scan
// of one of them, or of one of its partitions (see IsHistory), fails
// Check.
var HistoryTables = []string{"messages", "deliveries", "attempts", "replay_deliveries", "idempotency_records", "publish_idempotency_keys"}

// The filled template's shape: a hot endpoint (HotTenant's) with
// hotDeliveries of the history, and background tenants with the rest.
const (
	// HotTenant is the tenant of the hot endpoint.
	HotTenant         = "history_hot"
	hotDeliveries     = 40_000
	backgroundHistory = 160_000
)

// Filled is Herald's migrated schema with a history of 200,000 deliveries
// over 30 days, vacuumed and analysed. Its fingerprint follows the
// migrations', so a changed schema gets a fresh fill.
var Filled = pgtest.Template{Name: "history", Fingerprint: migrations.Fingerprint() + "h5", Migrate: fill}

func fill(ctx context.Context, pool *pgxpool.Pool) error {
	if err := migrations.Apply(ctx, pool); err != nil {
		return err
	}
	hot := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO herald.tenants (id) VALUES ($1)`, HotTenant); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO herald.endpoints (id, tenant_id, url, created_at) VALUES ($1, $2, 'https://hot.invalid/hook', now() - interval '31 days')`, hot, HotTenant); err != nil {
		return err
	}
	// Whole days, ending at the start of today (UTC), so that every
	// partition holds a whole day's history whatever the hour of the fill:
	// filled at 13:20, the first day's partition held ten hours, and the
	// plans of batches spread over it read that small partition
	// sequentially where a whole day's is read by its index.
	_, err := historyfill.Fill(ctx, pool, historyfill.Spec{
		End:        time.Now().UTC().Truncate(24 * time.Hour),
		Deliveries: backgroundHistory,
		Streams:    []historyfill.Stream{{TenantID: HotTenant, EndpointID: hot, Deliveries: hotDeliveries}},
	})
	return err
}

// Sample names rows of the filled history to use as query arguments.
type Sample struct {
	// TenantID and EndpointID are the hot endpoint's.
	TenantID   string
	EndpointID uuid.UUID
	// MessageID, DeliveryID and AttemptID are one of its deliveries in the
	// middle of the history, with that delivery's message and attempt.
	MessageID, DeliveryID, AttemptID uuid.UUID
	// DeliveryAt is when that delivery was created.
	DeliveryAt time.Time
	// ReplayID is a replay of a background endpoint.
	ReplayID uuid.UUID
	// End is when the history ends (the template may have been filled days
	// before the test runs). A query whose bound is relative to now takes
	// an argument relative to End where it can.
	End time.Time
}

// NewPool returns a pool on a fresh clone of Filled and a Sample of it.
func NewPool(t testing.TB) (*pgxpool.Pool, Sample) {
	t.Helper()
	pool := pgtest.NewPoolFrom(t, Filled)
	var s Sample
	err := pool.QueryRow(t.Context(), `
SELECT e.tenant_id, e.id, d.message_id, d.id, a.id, d.created_at, (SELECT id FROM herald.replays ORDER BY id LIMIT 1),
  (SELECT max(created_at) FROM herald.deliveries)
FROM herald.endpoints e
CROSS JOIN LATERAL (SELECT * FROM herald.deliveries d WHERE d.endpoint_id = e.id
                    ORDER BY d.created_at, d.id OFFSET $2 LIMIT 1) d
CROSS JOIN LATERAL (SELECT id FROM herald.attempts a WHERE a.delivery_id = d.id LIMIT 1) a
WHERE e.tenant_id = $1`, HotTenant, hotDeliveries/2).Scan(&s.TenantID, &s.EndpointID, &s.MessageID, &s.DeliveryID, &s.AttemptID, &s.DeliveryAt, &s.ReplayID, &s.End)
	if err != nil {
		t.Fatalf("historyplan: sample the filled history: %v", err)
	}
	return pool, s
}

// Batch returns the ids that sql, a query of the filled history with one
// uuid column, returns for args, and fails the test unless there are n of
// them: a batch for a statement that takes one, as big as the code makes
// it. A batch of one plans a nested loop where a few hundred may plan a
// join that reads every partition whole (delivery.recordAttempts; see
// docs/history-queries.md).
func Batch(t testing.TB, pool *pgxpool.Pool, n int, sql string, args ...any) []uuid.UUID {
	t.Helper()
	rows, err := pool.Query(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("historyplan: a batch of the filled history: %v", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		t.Fatalf("historyplan: a batch of the filled history: %v", err)
	}
	if len(ids) != n {
		t.Fatalf("historyplan: a batch of the filled history has %d ids, want %d:\n%s", len(ids), n, sql)
	}
	return ids
}

// Newest returns the ids of the newest n rows of the history table table,
// newest first: a batch as a burst names its rows, all in the last
// partition.
func Newest(t testing.TB, pool *pgxpool.Pool, table string, n int) []uuid.UUID {
	t.Helper()
	return Batch(t, pool, n, `SELECT id FROM herald.`+pgx.Identifier{table}.Sanitize()+` ORDER BY id DESC LIMIT $1`, n)
}

// Query is one query Herald runs on history, as its package runs it.
type Query struct {
	// Name says what runs it; docs/history-queries.md uses the same names.
	Name string
	SQL  string
	Args []any
	// IndexConds are fragments that must appear in the plan's index
	// conditions, for a query whose bound is more than "not a sequential
	// scan": a keyset walk's cursor, which as a mere filter would have each
	// page re-read everything before it.
	IndexConds []string
	// Uses are indexes the plan must read, where another would serve it
	// worse. An entry may name alternatives separated by "|", any of
	// which will do: "messages_undispatched|messages_undispatched_tenant".
	Uses []string
	// Setup runs before the query in its transaction, as the package does
	// (SET LOCAL enable_seqscan = off, say).
	Setup []string
	// OnePartition are history tables the query reads one partition at a
	// time: each read of such a table, for the query or for each row of an
	// outer one, finds its partition by the id range it names (package
	// internal/historyid; herald.history_lower and history_upper) and the
	// planner prunes the others, when it plans or at run time. Without it
	// a lookup by message_id probes the index of every partition. Check
	// runs such a query (EXPLAIN ANALYZE, rolled back) to see what run-time
	// pruning left.
	OnePartition []string
	// Spread is, for a query given a batch whose rows lie in several
	// partitions (a replay's batch of a quiet endpoint, a purge's of a
	// quiet tenant), how many partitions of its OnePartition tables they
	// lie in (Partitions). A read that runs once may then read as many,
	// each through an index condition on the batch's array (= ANY): the
	// batch looked up in each partition of its span; or through a partial
	// index, which holds the backlog only (deliveries_pending); or whole,
	// a partition of a few pages. Reading the span whole, as a hash or
	// merge join does, still fails, and so does a read run for each row
	// of an outer query that reads more than one partition a run.
	Spread int
	// Backlog are aliases, in SQL, of reads of a OnePartition table that
	// go to every partition by design, through a partial index that holds
	// only the backlog (messages_undispatched_object: no undispatched
	// message outlives the backlog) and so stays small however long Herald
	// runs. Those reads are not checked for pruning.
	Backlog []string

	analyze bool // run it: EXPLAIN ANALYZE
}

// Check plans each query twice, with its arguments (a custom plan) and as
// a generic plan (what a prepared statement may settle on after a few
// runs), and fails the test for each plan that scans a history table
// sequentially. Nothing runs: EXPLAIN only plans, and the transaction is
// rolled back.
func Check(t *testing.T, pool *pgxpool.Pool, queries []Query) {
	t.Helper()
	parents, err := indexParents(t.Context(), pool)
	if err != nil {
		t.Fatalf("historyplan: %v", err)
	}
	empty, small, err := partitionSizes(t.Context(), pool)
	if err != nil {
		t.Fatalf("historyplan: %v", err)
	}
	partial, err := partialIndexes(t.Context(), pool)
	if err != nil {
		t.Fatalf("historyplan: %v", err)
	}
	// A read of a batch spread over partitions may read one of them whole
	// if it is of a few pages, by whatever scan the planner finds
	// cheapest (as a sequential scan of one is allowed below), or read a
	// partial index whole: those of the history hold its backlog only
	// (deliveries_pending, messages_undispatched…).
	whole := func(n node) bool {
		return small[n.scanned()] || slices.ContainsFunc(n.indexes(), func(name string) bool { return partial[name] })
	}
	for _, q := range queries {
		for _, generic := range []bool{false, true} {
			plan, err := explain(t.Context(), pool, q, generic)
			if err != nil {
				t.Errorf("%s: %v", q.Name, err)
				continue
			}
			for _, want := range q.IndexConds {
				if !strings.Contains(strings.Join(indexConds(plan), "\n"), want) {
					t.Errorf("%s: its %s plan's index conditions do not include %q:\n%s", q.Name, kindOf(generic), want, textPlan(t.Context(), pool, q, generic))
				}
			}
			read := indexNames(plan)
			for _, name := range read {
				if parent, ok := parents[name]; ok {
					read = append(read, parent)
				}
			}
			for _, want := range q.Uses {
				if !slices.ContainsFunc(strings.Split(want, "|"), func(w string) bool { return slices.Contains(read, w) }) {
					t.Errorf("%s: its %s plan does not read %s:\n%s", q.Name, kindOf(generic), want, textPlan(t.Context(), pool, q, generic))
				}
			}
			scans := slices.DeleteFunc(SeqScans(plan), func(rel string) bool { return empty[rel] })
			if len(scans) > 0 && !slices.ContainsFunc(scans, func(rel string) bool { return !small[rel] }) {
				// Partitions of a few pages are read whole because that is
				// cheapest, not for want of an index: ask again with
				// sequential scans off, which the planner obeys wherever
				// an index path exists.
				off := q
				off.Setup = append(slices.Clone(q.Setup), "SET LOCAL enable_seqscan = off")
				if plan, err = explain(t.Context(), pool, off, generic); err != nil {
					t.Errorf("%s: %v", q.Name, err)
					continue
				}
				scans = slices.DeleteFunc(SeqScans(plan), func(rel string) bool { return empty[rel] })
			}
			if len(scans) > 0 {
				t.Errorf("%s: its %s plan scans %s sequentially; give it an index path (see docs/history-queries.md):\n%s",
					q.Name, kindOf(generic), strings.Join(scans, ", "), textPlan(t.Context(), pool, q, generic))
			}
			if len(q.OnePartition) > 0 {
				checkPruned(t, pool, q, generic, whole)
			}
		}
	}
}

// checkPruned runs q and fails the test if a read of one of its
// OnePartition tables read more than one partition (more than q.Spread,
// for a batch spread over them).
func checkPruned(t *testing.T, pool *pgxpool.Pool, q Query, generic bool, whole func(node) bool) {
	t.Helper()
	analyze := q
	analyze.analyze = true
	plan, err := explain(t.Context(), pool, analyze, generic)
	if err != nil {
		t.Errorf("%s: %v", q.Name, err)
		return
	}
	for _, table := range q.OnePartition {
		if reads := spreadReads(plan, table, q.Spread, whole, q.Backlog); len(reads) > 0 {
			t.Errorf("%s: its %s plan reads %s in more than one partition at a time (%s); bound it to the partition of the id it names (herald.history_lower, history_upper) or to the span of the batch it names (herald.least_id, greatest_id); see docs/history-queries.md:\n%s",
				q.Name, kindOf(generic), table, strings.Join(reads, "; "), textPlan(t.Context(), pool, analyze, generic))
		}
	}
}

// PartitionReads returns, for a JSON plan run with EXPLAIN ANALYZE, each
// Append or Merge Append over partitions of table whose partitions were
// read more often, together, than the Append itself ran: the reads a
// pruned lookup would not have made, as "read n times in m runs". Reads
// under one of the aliases backlog (as written in the SQL; the planner
// numbers each partition's, lower_1, lower_2, …) are left out.
func PartitionReads(planJSON []byte, table string, backlog ...string) []string {
	return SpreadReads(planJSON, table, 0, backlog...)
}

// SpreadReads is PartitionReads for a lookup of a batch whose rows lie in
// spread partitions of table (see Query.Spread): an Append that runs once
// may read up to spread partitions if each read looks the batch up by an
// index condition on an array (= ANY). With spread 0 or 1 it is
// PartitionReads.
func SpreadReads(planJSON []byte, table string, spread int, backlog ...string) []string {
	return spreadReads(planJSON, table, spread, nil, backlog)
}

// spreadReads is SpreadReads where a read for which whole is true counts
// as the batch's, though not by its array (see Check: a partition of a
// few pages, or a partial index of the backlog).
func spreadReads(planJSON []byte, table string, spread int, whole func(node) bool, backlog []string) []string {
	return collect(planJSON, func(n node) string {
		if n.NodeType != "Append" && n.NodeType != "Merge Append" {
			return ""
		}
		reads := 0.0
		byArray := true
		for _, c := range n.Plans {
			if tableOf(c.scanned()) != table || slices.Contains(backlog, aliasOf(c)) {
				return ""
			}
			reads += c.Loops
			if c.Loops > 0 && !c.looksUpArray() && (whole == nil || !whole(c)) {
				byArray = false
			}
		}
		if reads <= n.Loops {
			return ""
		}
		if n.Loops == 1 && reads <= float64(spread) && byArray {
			return ""
		}
		how := ""
		if n.Loops == 1 && reads <= float64(spread) {
			how = ", not all by the batch's array"
		}
		return fmt.Sprintf("%d partitions read %.0f times in %.0f runs%s", len(n.Plans), reads, n.Loops, how)
	})
}

// looksUpArray reports whether a scan node, or the index scan under it,
// has an index condition on an array (= ANY).
func (n node) looksUpArray() bool {
	if strings.Contains(n.IndexCond, "ANY (") {
		return true
	}
	for _, c := range n.Plans {
		if c.looksUpArray() {
			return true
		}
	}
	return false
}

// indexes returns the indexes a scan node, or the index scans under it,
// read.
func (n node) indexes() []string {
	var names []string
	if n.IndexName != "" {
		names = append(names, n.IndexName)
	}
	for _, c := range n.Plans {
		names = append(names, c.indexes()...)
	}
	return names
}

// Partitions returns how many partitions of the history table table hold
// rows in the span of ids, from herald.history_lower of the least to
// history_upper of the greatest: those a statement bounded to the span of
// a batch of ids (or of their messages' rows, which share their
// messages' milliseconds) reads. See Query.Spread.
func Partitions(t testing.TB, pool *pgxpool.Pool, table string, ids []uuid.UUID) int {
	t.Helper()
	ident := pgx.Identifier{"herald", table}.Sanitize()
	var keyDef string
	if err := pool.QueryRow(t.Context(), `SELECT pg_get_partkeydef($1::regclass)`, ident).Scan(&keyDef); err != nil {
		t.Fatalf("historyplan: the partition key of %s: %v", table, err)
	}
	key, ok := strings.CutPrefix(keyDef, "RANGE (")
	key, ok2 := strings.CutSuffix(key, ")")
	if !ok || !ok2 {
		t.Fatalf("historyplan: %s is partitioned by %s, not a range of one column", table, keyDef)
	}
	var n int
	col := pgx.Identifier{key}.Sanitize()
	if err := pool.QueryRow(t.Context(), `SELECT count(DISTINCT tableoid) FROM `+ident+`
WHERE `+col+` >= herald.history_lower(herald.least_id($1)) AND `+col+` < herald.history_upper(herald.greatest_id($1))`, ids).Scan(&n); err != nil {
		t.Fatalf("historyplan: the partitions of %s a batch spans: %v", table, err)
	}
	return n
}

// partialIndexes returns the partial indexes of the history's partitions.
func partialIndexes(ctx context.Context, pool *pgxpool.Pool) (map[string]bool, error) {
	rows, err := pool.Query(ctx, `
SELECT c.relname FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_inherits h ON h.inhrelid = c.oid
WHERE i.indpred IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("list the partitions' partial indexes: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the partitions' partial indexes: %w", err)
	}
	partial := map[string]bool{}
	for _, name := range names {
		partial[name] = true
	}
	return partial, nil
}

// partitionSizes tells which partitions of history tables hold no row
// (empty: those made ahead of time and the default partitions) and which
// fit in smallPartition bytes. The planner reads an empty table
// sequentially, which costs nothing however long Herald runs, and may read
// a small one whole because that is cheaper than an index; Check asks
// again with sequential scans off for those.
func partitionSizes(ctx context.Context, pool *pgxpool.Pool) (empty, small map[string]bool, err error) {
	rows, err := pool.Query(ctx, `
SELECT c.relname, pg_relation_size(c.oid) <= $2 FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
JOIN pg_namespace n ON n.oid = p.relnamespace AND n.nspname = 'herald'
WHERE c.relkind = 'r' AND p.relname = ANY($1)`, HistoryTables, smallPartition)
	if err != nil {
		return nil, nil, fmt.Errorf("list the history's partitions: %w", err)
	}
	empty, small = map[string]bool{}, map[string]bool{}
	var (
		name    string
		isSmall bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &isSmall}, func() error {
		small[name] = isSmall
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("list the history's partitions: %w", err)
	}
	for name := range small {
		var any bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM herald.`+pgx.Identifier{name}.Sanitize()+`)`).Scan(&any); err != nil {
			return nil, nil, fmt.Errorf("look into %s: %w", name, err)
		}
		empty[name] = !any
	}
	return empty, small, nil
}

// smallPartition is the size, 8 pages, up to which a partition may be
// read whole by the planner's choice (see partitionSizes).
const smallPartition = 8 * 8192

// indexParents maps the indexes of partitions to their partitioned
// tables' indexes: a plan reads deliveries_p20261203_000000_endpoint_id_idx
// where a query uses deliveries_pending.
func indexParents(ctx context.Context, pool *pgxpool.Pool) (map[string]string, error) {
	rows, err := pool.Query(ctx, `
SELECT c.relname, p.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
WHERE c.relkind = 'i'`)
	if err != nil {
		return nil, fmt.Errorf("read the partitions' indexes: %w", err)
	}
	parents := map[string]string{}
	var child, parent string
	_, err = pgx.ForEachRow(rows, []any{&child, &parent}, func() error {
		parents[child] = parent
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the partitions' indexes: %w", err)
	}
	return parents, nil
}

func kindOf(generic bool) string {
	if generic {
		return "generic"
	}
	return "custom"
}

// SeqScans returns the history tables (or their partitions) that a JSON
// plan (EXPLAIN (FORMAT JSON)) scans sequentially.
func SeqScans(planJSON []byte) []string {
	if !json.Valid(planJSON) {
		return []string{"(an unreadable plan)"}
	}
	return collect(planJSON, func(n node) string {
		if n.NodeType == "Seq Scan" && IsHistory(n.Relation) {
			return n.Relation
		}
		return ""
	})
}

// IsHistory reports whether relation is a history table or a partition of
// one: the table's name, "_p" and a digit or underscore
// (deliveries_p20261203, deliveries_p_default), or "_default".
func IsHistory(relation string) bool {
	for _, t := range HistoryTables {
		rest, ok := strings.CutPrefix(relation, t)
		if !ok {
			continue
		}
		if rest == "" || rest == "_default" {
			return true
		}
		if p, ok := strings.CutPrefix(rest, "_p"); ok && p != "" && (p[0] == '_' || p[0] >= '0' && p[0] <= '9') {
			return true
		}
	}
	return false
}

type node struct {
	NodeType  string  `json:"Node Type"`
	Relation  string  `json:"Relation Name"`
	Alias     string  `json:"Alias"`
	IndexCond string  `json:"Index Cond"`
	IndexName string  `json:"Index Name"`
	Loops     float64 `json:"Actual Loops"`
	Plans     []node  `json:"Plans"`
}

// aliasOf is the alias, as written in the SQL, of the relation a scan
// node reads: the planner's, less the number it gives each partition.
func aliasOf(n node) string {
	for n.Alias == "" && len(n.Plans) > 0 {
		n = n.Plans[0]
	}
	if i := strings.LastIndexByte(n.Alias, '_'); i > 0 && strings.Trim(n.Alias[i+1:], "0123456789") == "" {
		return n.Alias[:i]
	}
	return n.Alias
}

// scanned is the relation a scan node reads: its own, or for a bitmap
// heap scan's index, the heap's.
func (n node) scanned() string {
	if n.Relation != "" || len(n.Plans) == 0 {
		return n.Relation
	}
	return n.Plans[0].scanned()
}

// tableOf returns the history table relation is or is a partition of, or
// "" when it is none (see IsHistory).
func tableOf(relation string) string {
	if !IsHistory(relation) {
		return ""
	}
	for _, t := range HistoryTables {
		rest, ok := strings.CutPrefix(relation, t)
		if ok && (rest == "" || rest == "_default" || strings.HasPrefix(rest, "_p")) {
			return t
		}
	}
	return ""
}

// indexConds returns the index conditions of a JSON plan's nodes.
func indexConds(planJSON []byte) []string {
	return collect(planJSON, func(n node) string { return n.IndexCond })
}

// indexNames returns the indexes a JSON plan reads.
func indexNames(planJSON []byte) []string {
	return collect(planJSON, func(n node) string { return n.IndexName })
}

// collect returns field of every node of a JSON plan where it is set.
func collect(planJSON []byte, field func(node) string) []string {
	var plans []struct {
		Plan node `json:"Plan"`
	}
	if json.Unmarshal(planJSON, &plans) != nil {
		return nil
	}
	var found []string
	var walk func(n node)
	walk = func(n node) {
		if v := field(n); v != "" {
			found = append(found, v)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	for _, p := range plans {
		walk(p.Plan)
	}
	return found
}

func explain(ctx context.Context, pool *pgxpool.Pool, q Query, generic bool) ([]byte, error) {
	var plan []byte
	err := inTx(ctx, pool, q, generic, "FORMAT JSON", func(tx pgx.Tx, sql string, args []any) error {
		return tx.QueryRow(ctx, sql, args...).Scan(&plan)
	})
	return plan, err
}

func textPlan(ctx context.Context, pool *pgxpool.Pool, q Query, generic bool) string {
	var b strings.Builder
	err := inTx(ctx, pool, q, generic, "FORMAT TEXT", func(tx pgx.Tx, sql string, args []any) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var line string
		_, err = pgx.ForEachRow(rows, []any{&line}, func() error {
			b.WriteString("    " + line + "\n")
			return nil
		})
		return err
	})
	if err != nil {
		return err.Error()
	}
	return b.String()
}

// prepared numbers the statements inTx prepares.
var prepared atomic.Int64

// inTx runs an EXPLAIN of q in a transaction that is rolled back. A
// generic plan is had by preparing q and explaining its execution with
// plan_cache_mode = force_generic_plan.
func inTx(ctx context.Context, pool *pgxpool.Pool, q Query, generic bool, format string, run func(tx pgx.Tx, sql string, args []any) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, s := range q.Setup {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("setup %q: %w", s, err)
		}
	}
	if q.analyze {
		format = "ANALYZE, TIMING OFF, " + format
	}
	if !generic {
		return run(tx, "EXPLAIN ("+format+") "+q.SQL, q.Args)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		return err
	}
	// A prepared statement outlives the transaction; each gets a name of
	// its own, deallocated when the transaction ends with its connection.
	name := fmt.Sprintf("historyplan_%d", prepared.Add(1))
	if _, err := tx.Exec(ctx, "PREPARE "+name+" AS "+q.SQL); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	defer func() { _, _ = tx.Conn().Exec(context.WithoutCancel(ctx), "DEALLOCATE "+name) }()
	literals := make([]string, len(q.Args))
	for i, a := range q.Args {
		l, err := literal(a)
		if err != nil {
			return fmt.Errorf("argument $%d: %w", i+1, err)
		}
		literals[i] = l
	}
	sql := "EXPLAIN (" + format + ") EXECUTE " + name
	if len(literals) > 0 {
		sql += "(" + strings.Join(literals, ", ") + ")"
	}
	return run(tx, sql, nil)
}

// literal writes a query argument as an SQL literal for EXECUTE, whose
// arguments cannot be parameters of the statement around it.
func literal(a any) (string, error) {
	if a == nil {
		return "NULL", nil
	}
	v := reflect.ValueOf(a)
	switch {
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return "NULL", nil
		}
		return literal(v.Elem().Interface())
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
		elems := make([]string, v.Len())
		for i := range elems {
			e := v.Index(i)
			if e.Kind() == reflect.Pointer && e.IsNil() {
				elems[i] = "NULL"
				continue
			}
			if e.Kind() == reflect.Pointer {
				e = e.Elem()
			}
			text, err := plain(e.Interface())
			if err != nil {
				return "", err
			}
			elems[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(text) + `"`
		}
		return quote("{" + strings.Join(elems, ",") + "}"), nil
	}
	text, err := plain(a)
	if err != nil {
		return "", err
	}
	return quote(text), nil
}

// plain is a scalar argument as Postgres reads it from text.
func plain(a any) (string, error) {
	switch v := a.(type) {
	case string:
		return v, nil
	case uuid.UUID:
		return v.String(), nil
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	case int, int32, int64, float64, bool:
		return fmt.Sprint(v), nil
	}
	return "", fmt.Errorf("historyplan cannot write a %T as a literal; pass a string, uuid, time, number or bool, a slice of one or a pointer to one", a)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
