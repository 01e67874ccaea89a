package store

// DefaultListLimit is the page size when ListParams.Limit is zero.
const DefaultListLimit = 50

// MaxListLimit is the largest page a list returns.
const MaxListLimit = 200

// ListParams selects one page of a list ordered by id.
type ListParams[ID any] struct {
	// Limit is the page size. Defaults to DefaultListLimit (50); at most
	// MaxListLimit (200). Zero means the default.
	Limit int
	// After is the cursor: the id of the last item of the previous page.
	// The zero value starts at the beginning.
	After ID
}

// Page is one page of a list. Pages follow the id order, so paging through
// while others insert neither repeats nor skips an item that existed when
// the paging began. Endpoint ids are UUIDv7, so endpoints page in creation
// order.
type Page[T any] struct {
	// Items are at most Limit items.
	Items []T
	// More is true when items follow the last one; pass its id as After to
	// get them.
	More bool
}

func limit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultListLimit, nil
	case n < 0 || n > MaxListLimit:
		return 0, invalid("limit", "is %d; give 1 to %d, or 0 for the default of %d", n, MaxListLimit, DefaultListLimit)
	}
	return n, nil
}

// page trims the one extra row a list query fetches to learn whether more
// follow.
func page[T any](items []T, limit int) Page[T] {
	if len(items) > limit {
		return Page[T]{Items: items[:limit], More: true}
	}
	return Page[T]{Items: items}
}
