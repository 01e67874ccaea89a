package chaos

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/delivery"
)

// checkOrder checks the promise of the third endpoint (ordering object)
// from the consumer's side: for each object, every request of a version
// started after each lower version of the endpoint's events had been
// answered 2xx (a version given up by Herald aside: it is the one gap
// allowed), and none started after a higher version had been. A version
// may arrive more than once (the sender timed out, its dispatcher was
// killed) but never out of turn.
func checkOrder(ctx context.Context, r *Report, h *harness, messages map[string]message, arrivals []arrival) error {
	if r.Config.OrderedShare == 0 {
		return nil
	}
	givenUp, err := readGivenUp(ctx, h.herald, h.orderedEndpoint)
	if err != nil {
		return err
	}
	r.OrderedGivenUp = len(givenUp)

	o := orderOf(messages, arrivals, givenUp)
	r.OrderedEvents, r.OrderedRequests = o.events, o.requests
	early, late, missing := o.early, o.late, o.missing
	r.OutOfOrder = len(early) + len(late)
	if len(early) > 0 {
		r.problem("%d requests to the ordered endpoint went before a lower version of their object was answered 2xx, e.g. %s", len(early), examples(early))
	}
	if len(late) > 0 {
		r.problem("%d requests to the ordered endpoint went after a higher version of their object was answered 2xx, e.g. %s", len(late), examples(late))
	}
	if len(missing) > 0 {
		r.problem("%d versions for the ordered endpoint were neither answered 2xx nor given up: a gap, e.g. %s", len(missing), examples(missing))
	}
	return nil
}

func acceptedText(at time.Time, done bool) string {
	if !done {
		return " (it never was)"
	}
	return " (at " + at.Format(time.RFC3339Nano) + ")"
}

// readGivenUp returns the webhook IDs of endpoint's deliveries that did
// not succeed: given up, the gaps an ordered line may have.
func readGivenUp(ctx context.Context, herald *pgxpool.Pool, endpoint uuid.UUID) (map[string]bool, error) {
	rows, err := herald.Query(ctx, selectNotSucceeded, endpoint)
	if err != nil {
		return nil, fmt.Errorf("read the ordered endpoint's deliveries: %w", err)
	}
	givenUp := make(map[string]bool)
	var id uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { givenUp[delivery.MessageHeaderID(id)] = true; return nil }); err != nil {
		return nil, fmt.Errorf("read the ordered endpoint's deliveries: %w", err)
	}
	return givenUp, nil
}

// order is what the consumer saw of the ordered endpoint.
type order struct {
	events, requests int
	// early lists requests sent before a lower version of their object was
	// answered 2xx, late those sent after a higher one was, missing the
	// versions never answered 2xx nor given up.
	early, late, missing []string
}

// orderOf reads the ordered endpoint's requests among arrivals against
// the events of orderedType among messages; givenUp holds the webhook IDs
// Herald gave up, which may be missing.
func orderOf(messages map[string]message, arrivals []arrival, givenUp map[string]bool) order {
	var o order
	// Each object's versions of the endpoint's type, in order.
	versions := make(map[string][]message)
	ids := make(map[string]map[int64]string) // object → version → webhook ID
	for id, m := range messages {
		if m.eventType != orderedType {
			continue
		}
		o.events++
		versions[m.objectID] = append(versions[m.objectID], m)
		if ids[m.objectID] == nil {
			ids[m.objectID] = make(map[int64]string)
		}
		ids[m.objectID][m.version] = id
	}
	for _, vs := range versions {
		slices.SortFunc(vs, func(a, b message) int { return cmp.Compare(a.version, b.version) })
	}

	// When each version was first answered 2xx at the consumer.
	accepted := make(map[string]time.Time)
	var requests []arrival
	for _, a := range arrivals {
		if a.endpoint != orderedPath {
			continue
		}
		requests = append(requests, a)
		if a.fault == NoFault && a.inbox == http.StatusOK {
			if at, ok := accepted[a.webhookID]; !ok || a.end.Before(at) {
				accepted[a.webhookID] = a.end
			}
		}
	}
	o.requests = len(requests)

	for _, a := range requests {
		m, ok := messages[a.webhookID]
		if !ok || m.eventType != orderedType {
			continue // a stray, which checkArrivals reports
		}
		for _, other := range versions[m.objectID] {
			id := ids[m.objectID][other.version]
			at, done := accepted[id]
			switch {
			case other.version < m.version && !givenUp[id] && (!done || at.After(a.at)):
				o.early = append(o.early, fmt.Sprintf("%s version %d sent at %s before version %d was answered 2xx%s",
					m.objectID, m.version, a.at.Format(time.RFC3339Nano), other.version, acceptedText(at, done)))
			case other.version > m.version && done && at.Before(a.at):
				o.late = append(o.late, fmt.Sprintf("%s version %d sent at %s after version %d was answered 2xx at %s",
					m.objectID, m.version, a.at.Format(time.RFC3339Nano), other.version, at.Format(time.RFC3339Nano)))
			}
		}
	}
	for object, vs := range versions {
		for _, m := range vs {
			id := ids[object][m.version]
			if _, ok := accepted[id]; !ok && !givenUp[id] {
				o.missing = append(o.missing, fmt.Sprintf("%s version %d (%s)", object, m.version, id))
			}
		}
	}
	return o
}
