package replay

import (
	"testing"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/delivery"
)

// A replay's requeued deliveries go to batch jobs of at most MaxBatch, one
// generation a job (issue 16, item 3: replays as fast as first attempts),
// with the replay trigger, in the order they were walked.
func TestBatchJobsGroupByGenerationUpToMaxBatch(t *testing.T) {
	t.Parallel()
	endpoint := uuid.New()
	var queued []requeuedDelivery
	for i := range 2*delivery.MaxBatch + 10 {
		queued = append(queued, requeuedDelivery{ID: uuid.New(), Generation: 1 + i%7/6}) // one in seven at generation 2
	}
	params := batchJobs(endpoint, queued)
	seen := map[uuid.UUID]bool{}
	perGeneration := map[int]int{}
	for _, p := range params {
		args := p.Args.(delivery.BatchArgs)
		if args.EndpointID != endpoint || args.Trigger != delivery.TriggerReplay {
			t.Fatalf("job %+v: want endpoint %s and the replay trigger", args, endpoint)
		}
		if n := len(args.DeliveryIDs); n == 0 || n > delivery.MaxBatch {
			t.Fatalf("a job of %d deliveries; want 1 to %d", n, delivery.MaxBatch)
		}
		perGeneration[args.Generation] += len(args.DeliveryIDs)
		for _, id := range args.DeliveryIDs {
			seen[id] = true
		}
	}
	for _, d := range queued {
		if !seen[d.ID] {
			t.Fatalf("delivery %s has no job", d.ID)
		}
	}
	if len(params) != 3 || perGeneration[1]+perGeneration[2] != len(queued) || perGeneration[2] == 0 {
		t.Fatalf("%d jobs, %v deliveries per generation; want 2 jobs of generation 1 (180) and 1 of generation 2 (30)", len(params), perGeneration)
	}
}
