package store

import "slices"

// Ordering is an endpoint's delivery order: the values of
// herald.endpoints.ordering (migrations/0030_ordered_delivery.sql).
type Ordering string

// The orderings.
const (
	// OrderingNone sends every delivery on its own: several of one object
	// may be in flight at once, and a retry does not hold back later
	// versions. The default.
	OrderingNone Ordering = "none"
	// OrderingObject sends the deliveries of one object one at a time, in
	// version order: a version is sent once the one before it has settled
	// (succeeded, or been given up). Different objects still go in
	// parallel. docs/DESIGN.md, "Ordered delivery", has the rules.
	OrderingObject Ordering = "object"
)

// Orderings lists every ordering, the default first.
func Orderings() []Ordering {
	return []Ordering{OrderingNone, OrderingObject}
}

// Valid reports whether o is one of Orderings.
func (o Ordering) Valid() bool {
	return slices.Contains(Orderings(), o)
}
