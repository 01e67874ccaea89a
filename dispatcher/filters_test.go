package dispatcher

import (
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A filter is compiled once per endpoint and source: the same source gives
// the same compiled filter, an edited one a new one, and one that does not
// parse nil (every message passes).
func TestFilterCacheCompilesOnce(t *testing.T) {
	t.Parallel()
	c := newFilterCache(slog.New(slog.DiscardHandler))
	endpoint := uuid.New()
	first := c.get(endpoint, `data.amount > 1`)
	require.NotNil(t, first)
	require.Same(t, first, c.get(endpoint, `data.amount > 1`), "compiled once")
	edited := c.get(endpoint, `data.amount > 2`)
	require.NotSame(t, first, edited, "an edited filter is compiled again")
	require.Len(t, c.byEndpoint, 1, "the old one is dropped")
	require.Nil(t, c.get(uuid.New(), `data.amount >>`))

	m := messageFilter{cache: c, body: []byte(`{"data":{"amount":2}}`)}
	require.True(t, m.passes(endpoint, `data.amount > 1`))
	require.False(t, m.passes(endpoint, `data.amount > 2`))
	require.True(t, m.passes(uuid.New(), `data.amount >>`), "a filter that does not parse lets the message through")
}
