package sim

import "fmt"

// Kind says what an event does to its account.
type Kind int

const (
	// Credit adds Amount credits to the account.
	Credit Kind = iota + 1
	// Plan sets the account's plan to version Version.
	Plan
)

// creditAmount is what every credit event adds.
const creditAmount = 100

// firstSecond is the synthetic creation time of the first event, in unix
// seconds (2026-09-21).
const firstSecond = 1790000000

// Event is one logical event the provider sends, however many times.
type Event struct {
	// ID is the stable event ID, "evt_000132"; it is the webhook-id of
	// every delivery of the event.
	ID string
	// Index is the event's position in creation order.
	Index int
	Kind  Kind
	// Account is the account the event changes.
	Account int
	// Amount is the credits a Credit event adds.
	Amount int64
	// Version is the per-account sequence number of a Plan event, from 1.
	Version int64
	// Created is the creation time in whole unix seconds; several events
	// share a second.
	Created int64
	// SameSecond marks the second plan update of a same-second pair.
	SameSecond bool
}

// Stream is the generated input of the handler experiment.
type Stream struct {
	Events []Event
	// LatestPlan[a] is the last plan version sent for account a, 0 if none.
	LatestPlan []int64
}

// Credits counts the credit events.
func (s Stream) Credits() int {
	n := 0
	for _, e := range s.Events {
		if e.Kind == Credit {
			n++
		}
	}
	return n
}

// SameSecondPairs counts the plan updates that share their second with the
// previous update of the same account.
func (s Stream) SameSecondPairs() int {
	n := 0
	for _, e := range s.Events {
		if e.SameSecond {
			n++
		}
	}
	return n
}

// Generate creates cfg.Events events from cfg.Seed. Time advances by a
// second with chance one half before each event; each event picks an
// account uniformly, then is a credit with chance CreditShare or else a
// plan update carrying the account's next version, which with chance
// SameSecond is followed at once by another update of the same account in
// the same second.
func Generate(cfg Config) Stream {
	rnd := stream(cfg.Seed)
	s := Stream{Events: make([]Event, 0, cfg.Events), LatestPlan: make([]int64, cfg.Accounts)}
	add := func(e Event) {
		e.Index = len(s.Events)
		e.ID = fmt.Sprintf("evt_%06d", e.Index)
		s.Events = append(s.Events, e)
	}
	created := int64(firstSecond)
	for len(s.Events) < cfg.Events {
		if rnd.next() < 0.5 {
			created++
		}
		account := int(rnd.next() * float64(cfg.Accounts))
		if rnd.next() < cfg.CreditShare {
			add(Event{Kind: Credit, Account: account, Amount: creditAmount, Created: created})
			continue
		}
		s.LatestPlan[account]++
		add(Event{Kind: Plan, Account: account, Version: s.LatestPlan[account], Created: created})
		if rnd.next() < cfg.SameSecond && len(s.Events) < cfg.Events {
			s.LatestPlan[account]++
			add(Event{Kind: Plan, Account: account, Version: s.LatestPlan[account], Created: created, SameSecond: true})
		}
	}
	return s
}

// accountID names an account the way payloads and the report do.
func accountID(a int) string { return fmt.Sprintf("acct_%04d", a) }
