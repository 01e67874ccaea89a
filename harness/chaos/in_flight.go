package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// overlap is a request of a delivery that reached the consumer while an
// earlier request of the same delivery was still in flight there.
type overlap struct {
	endpoint, webhookID string
	// earlier is the request still in flight, later the one that arrived.
	earlier, later interval
}

type interval struct{ from, to time.Time }

func (o overlap) String() string {
	return fmt.Sprintf("%s%s: a request at %s while the one of %s was in flight until %s", o.endpoint, "/"+o.webhookID,
		o.later.from.Format(time.RFC3339Nano), o.earlier.from.Format(time.RFC3339Nano), o.earlier.to.Format(time.RFC3339Nano))
}

// overlaps finds, from the consumer's record of each request's start and
// end, every request of a delivery (an endpoint and a webhook ID) that
// started before an earlier request of it ended: two attempts of one
// delivery in flight at once. A request that starts the instant another
// ends does not overlap it.
func overlaps(arrivals []arrival) []overlap {
	type key struct{ endpoint, webhookID string }
	byDelivery := make(map[key][]interval)
	for _, a := range arrivals {
		k := key{a.endpoint, a.webhookID}
		byDelivery[k] = append(byDelivery[k], interval{from: a.at, to: a.end})
	}
	var found []overlap
	for k, spans := range byDelivery {
		slices.SortFunc(spans, func(a, b interval) int { return cmp.Or(a.from.Compare(b.from), a.to.Compare(b.to)) })
		// The request in flight longest so far: a short one after a long
		// one does not hide the long one from the next.
		longest := spans[0]
		for _, s := range spans[1:] {
			if s.from.Before(longest.to) {
				found = append(found, overlap{endpoint: k.endpoint, webhookID: k.webhookID, earlier: longest, later: s})
			}
			if s.to.After(longest.to) {
				longest = s
			}
		}
	}
	slices.SortFunc(found, func(a, b overlap) int { return a.later.from.Compare(b.later.from) })
	return found
}
