package receiver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPlanLease(t *testing.T) {
	t.Parallel()
	fresh := func(id int64, attempts int) dueEvent { return dueEvent{id: id, attempts: attempts} }
	lapsedInBatch := func(id int64, attempts int) dueEvent {
		return dueEvent{id: id, attempts: attempts, lapsed: true}
	}
	lapsedAlone := func(id int64, attempts int) dueEvent {
		return dueEvent{id: id, attempts: attempts, lapsed: true, leasedAlone: true}
	}

	for _, tc := range []struct {
		name      string
		due       []dueEvent
		wantLease []int64
		wantAlone bool
		wantDead  []int64
	}{
		{"NothingDue", nil, nil, false, nil},
		{"NoneLapsedAreLeasedTogether", []dueEvent{fresh(1, 0), fresh(2, 4), fresh(3, 1)}, []int64{1, 2, 3}, false, nil},
		{"ALapsedBatchEventIsLeasedAlone", []dueEvent{fresh(1, 0), lapsedInBatch(2, 1), lapsedInBatch(3, 1)}, []int64{2}, true, nil},
		// A batch's lapse does not prove the event killed its process:
		// even at MaxAttempts it gets an attempt alone first.
		{"ALapsedBatchEventAtMaxAttemptsIsLeasedAlone", []dueEvent{lapsedInBatch(1, 3)}, []int64{1}, true, nil},
		{"ALapsedAloneEventBelowMaxAttemptsIsLeasedAloneAgain", []dueEvent{fresh(1, 0), lapsedAlone(2, 2)}, []int64{2}, true, nil},
		{"ALapsedAloneEventAtMaxAttemptsIsDead", []dueEvent{lapsedAlone(1, 3), fresh(2, 0), fresh(3, 0)}, []int64{2, 3}, false, []int64{1}},
		{"DeadAndLeasedAloneInOneClaim", []dueEvent{lapsedAlone(1, 3), lapsedInBatch(2, 1), lapsedAlone(3, 5), fresh(4, 0)}, []int64{2}, true, []int64{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan := planLease(tc.due, 3)
			require.Equal(t, tc.wantLease, plan.lease, "leased")
			require.Equal(t, tc.wantAlone, plan.alone, "alone")
			var dead []int64
			for _, ev := range plan.dead {
				dead = append(dead, ev.id)
			}
			require.Equal(t, tc.wantDead, dead, "dead letters")
		})
	}
}
