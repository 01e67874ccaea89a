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
