package chaos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFaultDraws(t *testing.T) {
	t.Parallel()
	f := Faults{Fail: 0.05, Hang: 0.02, Drop: 0.02, Late: 0.02}

	t.Run("KeyedBySeedEventAndArrival", func(t *testing.T) {
		t.Parallel()
		for i := range 100 {
			id := fmt.Sprintf("msg_%d", i)
			require.Equal(t, f.draw(7, id, 1), f.draw(7, id, 1), "the same request draws the same fault")
		}
		differ := 0
		for i := range 1000 {
			if f.draw(7, fmt.Sprintf("msg_%d", i), 1) != f.draw(8, fmt.Sprintf("msg_%d", i), 1) {
				differ++
			}
		}
		require.Positive(t, differ, "another seed draws other faults")
	})

	t.Run("FollowTheChances", func(t *testing.T) {
		t.Parallel()
		const n = 100_000
		counts := map[Fault]int{}
		for i := range n {
			counts[f.draw(20261202, fmt.Sprintf("msg_%d", i), 1+i%3)]++
		}
		for fault, chance := range map[Fault]float64{Fail: f.Fail, Hang: f.Hang, Drop: f.Drop, Late: f.Late, NoFault: 0.89} {
			require.InDelta(t, chance, float64(counts[fault])/n, 0.005, "share of %s", fault)
		}
	})

	t.Run("NoChancesNoFaults", func(t *testing.T) {
		t.Parallel()
		for i := range 1000 {
			require.Equal(t, NoFault, Faults{}.draw(1, fmt.Sprintf("msg_%d", i), 1))
		}
	})
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Full().Validate())
	require.NoError(t, Small().Validate())

	for name, tc := range map[string]struct {
		change func(*Config)
		want   string
	}{
		"no events":            {func(c *Config) { c.Events = 0 }, "Events is 0"},
		"one dispatcher kills": {func(c *Config) { c.Dispatchers = 1 }, "at least 2"},
		"chance out of range":  {func(c *Config) { c.Faults.Fail = 1.5 }, "fault chance Fail is 1.5"},
		"mostly faults":        {func(c *Config) { c.Faults = Faults{Fail: 0.3, Hang: 0.3} }, "add up to 0.6"},
		"no timeout":           {func(c *Config) { c.SenderTimeout = 0 }, "SenderTimeout is 0s"},
		"rollback":             {func(c *Config) { c.Rollback = 1 }, "Rollback is 1"},
		"poison out of range":  {func(c *Config) { c.Poison = c.Events }, "Poison is 1000"},
		"negative resends":     {func(c *Config) { c.Resends = -1 }, "Resends is -1"},
		"black hole alone":     {func(c *Config) { c.Dispatchers, c.Kills = 1, 0 }, "black-holing its database needs at least 2"},
		"gone never ends":      {func(c *Config) { c.GoneUntil = 1 }, "GoneUntil is 1"},
	} {
		c := Small()
		tc.change(&c)
		require.ErrorContains(t, c.Validate(), tc.want, name)
	}
}

func TestDisruptionsSpreadKillsAndPlaceTheOthers(t *testing.T) {
	t.Parallel()
	cfg := Full()
	ds := disruptions(cfg, true)
	require.Len(t, ds, cfg.Kills+5)
	kinds := map[disruptionKind]int{}
	turns := map[int]int{}
	for i, d := range ds {
		require.Greater(t, d.at, 0.0)
		require.Less(t, d.at, 1.0)
		if i > 0 {
			require.GreaterOrEqual(t, d.at, ds[i-1].at, "in order of progress")
		}
		kinds[d.kind]++
		switch d.kind {
		case kill:
			turns[d.dispatcher]++
		case outage:
			require.Equal(t, outageAt, d.at)
		case enableGone:
			require.Equal(t, cfg.GoneUntil, d.at)
		}
	}
	require.Equal(t, map[disruptionKind]int{kill: cfg.Kills, outage: 1, resend: 1, forceEnd: 1, enableGone: 1, blackHoleDB: 1}, kinds)
	require.Equal(t, map[int]int{0: 3, 1: 3}, turns, "the dispatchers take turns")
	require.Len(t, disruptions(cfg, false), cfg.Kills+4)

	cfg.GoneShare, cfg.Resends, cfg.ForcedEnds, cfg.BlackHole = 0, 0, 0, 0
	require.Len(t, disruptions(cfg, false), cfg.Kills, "each of the others can be left out")
}
