package sim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// With deliveries racing over HTTP into Postgres, the designs built on the
// receiver module apply every event exactly once, and the version guard
// leaves no account on an old plan; the naive design shows the faults were
// there to absorb. The small run gets more duplicates and concurrent pairs
// than the article's chances, so that it has races to survive.
func TestHandlerTableInvariants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Duplicate = 0.1
	b.cfg.Concurrent = 0.05

	table, err := RunHandlers(context.Background(), b.cfg, b.newDB)
	require.NoError(t, err)
	rows := make(map[string]HandlerRow)
	for _, r := range table.Rows {
		rows[r.Design] = r
	}
	require.Len(t, rows, 6)

	naive := rows["naive"]
	require.Positive(t, naive.ExtraApplies, "duplicates reached the handlers")
	require.Greater(t, naive.Ledger, naive.Expected)
	require.Greater(t, naive.PeakInFlight, 2, "deliveries were in flight together")

	for _, name := range []string{"atomic insert", "created >=", "created >", "version guard"} {
		r := rows[name]
		require.Zero(t, r.DuplicatedEvents, name)
		require.Zero(t, r.ExtraApplies, name)
		require.Zero(t, r.Lost, name)
		require.Zero(t, r.Errors, name)
		require.Equal(t, r.Expected, r.Ledger, name)
		// Every design that never answers 5xx got the same deliveries:
		// the faults are keyed by event and attempt.
		require.Equal(t, naive.Deliveries, r.Deliveries, name)
	}
	guard := rows["version guard"]
	require.Zero(t, guard.StaleWrites)
	require.Zero(t, guard.StaleAccounts)
	require.Zero(t, rows["created >"].StaleWrites, "a strictly later second is always a later version")

	check := rows["check-then-insert"]
	require.Zero(t, check.Lost)
	require.Equal(t, check.Deliveries-naive.Deliveries >= check.Errors, true, "every 5xx was retried")
}

// One delivery at a time still sends a concurrent pair together, and the
// receiver module's rows keep their guarantees.
func TestHandlerTableOneAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.MaxInFlight = 1
	b.cfg.Events = 100
	b.cfg.Concurrent = 0.05

	table, err := RunHandlers(context.Background(), b.cfg, b.newDB)
	require.NoError(t, err)
	for _, r := range table.Rows {
		require.LessOrEqual(t, r.PeakInFlight, 2, r.Design)
		if r.Design == "atomic insert" || r.Design == "version guard" {
			require.Zero(t, r.DuplicatedEvents, r.Design)
			require.Zero(t, r.Lost, r.Design)
		}
		if r.Design == "version guard" {
			require.Zero(t, r.StaleWrites)
			require.Zero(t, r.StaleAccounts)
		}
	}
}
