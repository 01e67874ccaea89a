package historyplan_test

import (
	"slices"
	"testing"

	"github.com/heraldhq/herald/internal/historyplan"
)

// A sequential scan of a history table is found wherever it sits in the
// plan, and so is one of a partition, as the tables are to be partitioned.
func TestSeqScansFindsHistoryTablesAndPartitions(t *testing.T) {
	t.Parallel()
	plan := []byte(`[{"Plan": {"Node Type": "Nested Loop", "Plans": [
  {"Node Type": "Seq Scan", "Relation Name": "endpoints"},
  {"Node Type": "Append", "Plans": [
    {"Node Type": "Index Scan", "Relation Name": "deliveries_p20261201", "Index Name": "deliveries_p20261201_pkey"},
    {"Node Type": "Seq Scan", "Relation Name": "deliveries_p20261202"}]},
  {"Node Type": "Seq Scan", "Relation Name": "attempts"}]}}]`)
	got := historyplan.SeqScans(plan)
	if want := []string{"deliveries_p20261202", "attempts"}; !slices.Equal(got, want) {
		t.Fatalf("SeqScans = %v, want %v", got, want)
	}
	for name, want := range map[string]bool{"messages": true, "messages_p2026": true, "attempts_p_default": true, "deliveries_default": true, "endpoints": false, "deliveries_pending": false, "river_job": false} {
		if historyplan.IsHistory(name) != want {
			t.Errorf("IsHistory(%q) = %v, want %v", name, !want, want)
		}
	}
}

// A lookup that read every partition of its table on each run is found;
// one whose other partitions were pruned (never run) is not, nor is an
// Append over something else.
func TestPartitionReadsFindsUnprunedLookups(t *testing.T) {
	t.Parallel()
	plan := []byte(`[{"Plan": {"Node Type": "Nested Loop", "Plans": [
  {"Node Type": "Append", "Actual Loops": 1, "Plans": [
    {"Node Type": "Index Scan", "Relation Name": "messages_p20261201", "Actual Loops": 1},
    {"Node Type": "Index Scan", "Relation Name": "messages_p20261202", "Actual Loops": 0}]},
  {"Node Type": "Append", "Actual Loops": 100, "Plans": [
    {"Node Type": "Index Scan", "Relation Name": "deliveries_p20261201", "Actual Loops": 100},
    {"Node Type": "Bitmap Heap Scan", "Relation Name": "deliveries_p20261202", "Actual Loops": 100,
     "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "deliveries_p20261202_pkey", "Actual Loops": 100}]}]},
  {"Node Type": "Append", "Actual Loops": 100, "Plans": [
    {"Node Type": "Index Scan", "Relation Name": "attempts_p20261201", "Actual Loops": 60},
    {"Node Type": "Index Scan", "Relation Name": "attempts_p20261202", "Actual Loops": 40},
    {"Node Type": "Index Scan", "Relation Name": "attempts_p_default", "Actual Loops": 0}]}]}}]`)
	if got := historyplan.PartitionReads(plan, "deliveries"); len(got) != 1 {
		t.Errorf("PartitionReads(deliveries) = %q, want the one unpruned Append", got)
	}
	for _, table := range []string{"attempts", "messages", "replay_deliveries"} {
		if got := historyplan.PartitionReads(plan, table); len(got) != 0 {
			t.Errorf("PartitionReads(%s) = %q, want none", table, got)
		}
	}
}

// A read of every partition under an alias named as the backlog's (a
// partial index of undispatched messages) is left out; the same read
// under another alias is not.
func TestPartitionReadsLeavesOutTheBacklog(t *testing.T) {
	t.Parallel()
	plan := []byte(`[{"Plan": {"Node Type": "Nested Loop", "Plans": [
  {"Node Type": "Append", "Actual Loops": 10, "Plans": [
    {"Node Type": "Index Only Scan", "Relation Name": "messages_p20261201", "Alias": "lower_1", "Actual Loops": 10},
    {"Node Type": "Index Only Scan", "Relation Name": "messages_p20261202", "Alias": "lower_2", "Actual Loops": 10}]}]}}]`)
	if got := historyplan.PartitionReads(plan, "messages", "lower"); len(got) != 0 {
		t.Errorf("PartitionReads(messages, lower) = %q, want none", got)
	}
	if got := historyplan.PartitionReads(plan, "messages", "m"); len(got) != 1 {
		t.Errorf("PartitionReads(messages, m) = %q, want the unpruned Append", got)
	}
}

// A batch spread over several partitions may be looked up by its array in
// each of them, once, but no more partitions than it spans, and not by
// reading a range of them whole (the inner side of a hash join).
func TestSpreadReadsAllowsTheBatchInEachPartitionOfItsSpan(t *testing.T) {
	t.Parallel()
	byArray := []byte(`[{"Plan": {"Node Type": "Append", "Actual Loops": 1, "Plans": [
    {"Node Type": "Index Scan", "Relation Name": "deliveries_p20261201", "Index Cond": "(id = ANY ($1))", "Actual Loops": 1},
    {"Node Type": "Bitmap Heap Scan", "Relation Name": "deliveries_p20261202", "Actual Loops": 1,
     "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "deliveries_p20261202_pkey", "Index Cond": "(id = ANY ('{…}'::uuid[]))", "Actual Loops": 1}]},
    {"Node Type": "Index Scan", "Relation Name": "deliveries_p20261203", "Index Cond": "(id = ANY ($1))", "Actual Loops": 1},
    {"Node Type": "Index Scan", "Relation Name": "deliveries_p20261204", "Index Cond": "(id = ANY ($1))", "Actual Loops": 0}]}}]`)
	if got := historyplan.SpreadReads(byArray, "deliveries", 3); len(got) != 0 {
		t.Errorf("SpreadReads(3 partitions) = %q, want none", got)
	}
	for _, spread := range []int{0, 1, 2} {
		if got := historyplan.SpreadReads(byArray, "deliveries", spread); len(got) != 1 {
			t.Errorf("SpreadReads(%d partitions) = %q, want the Append", spread, got)
		}
	}
	hashed := []byte(`[{"Plan": {"Node Type": "Hash Join", "Plans": [
  {"Node Type": "Function Scan", "Actual Loops": 1},
  {"Node Type": "Hash", "Actual Loops": 1, "Plans": [
    {"Node Type": "Append", "Actual Loops": 1, "Plans": [
      {"Node Type": "Index Scan", "Relation Name": "deliveries_p20261201", "Index Cond": "((id >= $2) AND (id < $3))", "Actual Loops": 1},
      {"Node Type": "Seq Scan", "Relation Name": "deliveries_p20261202", "Actual Loops": 1}]}]}]}}]`)
	if got := historyplan.SpreadReads(hashed, "deliveries", 3); len(got) != 1 {
		t.Errorf("SpreadReads(a hash join's span) = %q, want the Append", got)
	}
}
