package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The generator is the article's, so the article's seed yields its input:
// the same mix of events, the same same-second pairs, the same traced
// event and tie example.
func TestGenerateReproducesArticleInput(t *testing.T) {
	t.Parallel()

	cfg := Article()
	s := Generate(cfg)
	require.Len(t, s.Events, 10000)
	require.Equal(t, 5935, s.Credits())
	require.Equal(t, 193, s.SameSecondPairs())

	ds := plan(cfg, s)
	traced := tracedEvent(ds)
	require.NotNil(t, traced)
	require.Equal(t, "evt_000132", traced.ID)
	require.Equal(t, "acct_0243", accountID(traced.Account))

	n, older, newer := newerFirst(s, ds)
	require.Equal(t, 18, n)
	require.Equal(t, "evt_000090", older.ID)
	require.Equal(t, "evt_000091", newer.ID)
	require.Equal(t, older.Created, newer.Created)
	require.Equal(t, int64(1790000039), older.Created)
}

func TestGenerateVersionsIncreasePerAccount(t *testing.T) {
	t.Parallel()

	s := Generate(Small())
	last := make([]int64, Small().Accounts)
	var created int64
	for _, e := range s.Events {
		require.GreaterOrEqual(t, e.Created, created, "time never goes back")
		created = e.Created
		if e.Kind == Plan {
			require.Equal(t, last[e.Account]+1, e.Version, "%s", e.ID)
			last[e.Account] = e.Version
		}
	}
	require.Equal(t, last, s.LatestPlan)
}

func TestPlanIsSortedAndHasEveryEvent(t *testing.T) {
	t.Parallel()

	cfg := Small()
	s := Generate(cfg)
	ds := plan(cfg, s)
	seen := make(map[string]bool)
	for i, d := range ds {
		if i > 0 {
			require.LessOrEqual(t, ds[i-1].at, d.at)
		}
		seen[d.event.ID] = true
	}
	require.Len(t, seen, len(s.Events), "every event is sent at least once")
	require.Greater(t, len(ds), len(s.Events), "some events are duplicated")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()

	require.NoError(t, Article().Validate())
	require.NoError(t, Small().Validate())
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no events", func(c *Config) { c.Events = 0 }, "Events is 0; it must be at least 1"},
		{"chance above one", func(c *Config) { c.Duplicate = 1.5 }, "Duplicate is 1.5; a chance must be between 0 and 1"},
		{"negative chance", func(c *Config) { c.Shuffle = -0.1 }, "Shuffle is -0.1"},
		{"responses always lost", func(c *Config) { c.LostResponse = 1 }, "retried for ever"},
		{"always crashing", func(c *Config) { c.Crash = 1 }, "crash on every retry"},
		{"negative window", func(c *Config) { c.ShuffleWindow = -1 }, "ShuffleWindow is -1"},
		{"negative in flight", func(c *Config) { c.MaxInFlight = -2 }, "MaxInFlight is -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Article()
			tt.change(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}
