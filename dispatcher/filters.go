package dispatcher

import (
	"log/slog"
	"sync"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/filter"
)

// maxCachedFilters bounds the compiled filters a dispatcher keeps: 10,000,
// a few megabytes at most. A full cache starts afresh; the filters of the
// endpoints that still receive messages are compiled again on their next
// message.
const maxCachedFilters = 10_000

// filterCache holds the endpoints' compiled filters, each compiled once:
// an entry is keyed by the endpoint and holds the source it was compiled
// from, so an endpoint whose filter changed is compiled again and the old
// one dropped. Safe for concurrent use.
type filterCache struct {
	logger *slog.Logger

	mu         sync.Mutex
	byEndpoint map[uuid.UUID]compiledFilter
}

// compiledFilter is an endpoint's filter: its source and what Parse made of
// it. f is nil when it did not parse.
type compiledFilter struct {
	src string
	f   *filter.Filter
}

func newFilterCache(logger *slog.Logger) *filterCache {
	return &filterCache{logger: logger, byEndpoint: make(map[uuid.UUID]compiledFilter)}
}

// get returns endpointID's filter compiled from src. The store refuses a
// filter that does not parse, so one that does not parse here was stored
// by a version of Herald whose language differed: get logs it once per
// process and returns nil, which lets every message through. Delivering
// what the filter might have refused is recoverable by its receiver;
// dropping what it might have let through is not.
func (c *filterCache) get(endpointID uuid.UUID, src string) *filter.Filter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.byEndpoint[endpointID]; ok && cached.src == src {
		return cached.f
	}
	f, err := filter.Parse(src)
	if err != nil {
		c.logger.Error("an endpoint's filter does not parse; it receives every message until the filter is fixed",
			"endpoint_id", endpointID, "error", err)
	}
	if len(c.byEndpoint) >= maxCachedFilters {
		clear(c.byEndpoint)
	}
	c.byEndpoint[endpointID] = compiledFilter{src: src, f: f}
	return f
}

// messageFilter decides one claimed message against its endpoints'
// filters, decoding its body once, for the first filter that reads it.
type messageFilter struct {
	cache   *filterCache
	body    []byte
	decoded bool
	doc     filter.Document
	// undecodable is set when the body is not JSON: every filter then
	// lets the message through, as get does for a filter that does not
	// parse. The outbox stores only JSON, so it is not expected.
	undecodable bool
}

// passes reports whether the endpoint endpointID, whose filter is src,
// receives the message.
func (m *messageFilter) passes(endpointID uuid.UUID, src string) bool {
	f := m.cache.get(endpointID, src)
	if f == nil {
		return true
	}
	if !m.decoded {
		m.decoded = true
		doc, err := filter.Decode(m.body)
		if err != nil {
			m.cache.logger.Error("a message's body is not JSON; its endpoints' filters let it through", "error", err)
			m.undecodable = true
		}
		m.doc = doc
	}
	return m.undecodable || f.Match(m.doc)
}
