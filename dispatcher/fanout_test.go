package dispatcher

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
)

// A fan-out batch's deliveries go in one batch job per endpoint, in the
// order the endpoints first appear and taking them in turn, at most
// delivery.MaxBatch per job; a lone delivery gets a job of its own.
func TestJobGroupsBatchDeliveriesByEndpoint(t *testing.T) {
	busy, quiet := uuid.New(), uuid.New()
	var g jobGroups
	var busyIDs []uuid.UUID
	for i := range delivery.MaxBatch + 2 {
		id := uuid.New()
		busyIDs = append(busyIDs, id)
		g.add(busy, id)
		if i == 0 {
			g.add(quiet, uuid.New())
		}
	}

	jobs := g.jobs()
	require.Len(t, jobs, 3)
	first, ok := jobs[0].Args.(delivery.BatchArgs)
	require.True(t, ok, "job 1 is %T", jobs[0].Args)
	require.Equal(t, busy, first.EndpointID)
	require.Equal(t, busyIDs[:delivery.MaxBatch], first.DeliveryIDs)
	lone, ok := jobs[1].Args.(delivery.Args)
	require.True(t, ok, "job 2 is %T", jobs[1].Args)
	require.Equal(t, quiet, lone.EndpointID)
	require.Equal(t, delivery.TriggerScheduled, lone.Trigger)
	second, ok := jobs[2].Args.(delivery.BatchArgs)
	require.True(t, ok, "job 3 is %T", jobs[2].Args)
	require.Equal(t, busyIDs[delivery.MaxBatch:], second.DeliveryIDs)
}
