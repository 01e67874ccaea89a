package replay

import (
	"testing"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/delivery"
)

// A replay's requeued deliveries go to batch jobs of at most MaxBatch, one
// generation a job (issue 16, item 3: replays as fast as first attempts),
// with the replay trigger, in the order they were walked; a job is quiet
// when all its deliveries are.
func TestBatchJobsGroupByGenerationUpToMaxBatch(t *testing.T) {
	t.Parallel()
	endpoint := uuid.New()
	var queued []requeuedDelivery
	quiet := map[uuid.UUID]bool{}
	for i := range 2*delivery.MaxBatch + 10 {
		queued = append(queued, requeuedDelivery{ID: uuid.New(), Generation: 1 + i%7/6}) // one in seven at generation 2
		quiet[queued[i].ID] = i > 0
	}
	params := batchJobs(endpoint, queued, quiet)
	seen := map[uuid.UUID]bool{}
	perGeneration := map[int]int{}
	for _, p := range params {
		args := p.Args.(delivery.BatchArgs)
		if args.EndpointID != endpoint || args.Trigger != delivery.TriggerReplay {
			t.Fatalf("job %+v: want endpoint %s and the replay trigger", args, endpoint)
		}
		if holdsFirst := args.DeliveryIDs[0] == queued[0].ID; args.Quiet == holdsFirst {
			t.Fatalf("a job (first delivery %s) is quiet: %v; want quiet unless it holds the one delivery not quiet, %s", args.DeliveryIDs[0], args.Quiet, queued[0].ID)
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
