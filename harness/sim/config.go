package sim

import (
	"errors"
	"fmt"
)

// Config sets the size of a run and the chances of each fault. Chances are
// chosen, not measured anywhere; [Article] returns the reference article's.
type Config struct {
	// Seed fixes every draw: the events, the faults and the jitter.
	Seed uint32
	// Events is how many logical events the handler experiment sends.
	Events int
	// Accounts is how many accounts the events spread over.
	Accounts int
	// CreditShare is the chance that an event adds 100 credits; the rest
	// set an account's plan.
	CreditShare float64
	// SameSecond is the chance that a plan update is followed by a second
	// update of the same account in the same second.
	SameSecond float64
	// Duplicate is the chance that an event is sent again later.
	Duplicate float64
	// LostResponse is the chance, drawn again on every attempt, that the
	// receiver's response never reaches the sender after the handler
	// finished, so the sender retries.
	LostResponse float64
	// Concurrent is the chance that an event's first delivery arrives twice
	// at the same moment.
	Concurrent float64
	// Shuffle is the chance that an event's first delivery is moved up to
	// ShuffleWindow positions earlier or later.
	Shuffle float64
	// ShuffleWindow is how far a shuffled delivery can move, in positions.
	ShuffleWindow int
	// MaxInFlight caps how many deliveries the sender has in flight at
	// once. Zero means no cap beyond the plan's own (see [RunHandlers]).
	MaxInFlight int
	// Connections is the size of each design's connection pool. Defaults
	// to 4. Zero means the default.
	Connections int

	// CrashEvents is how many credit events the crash experiment sends.
	CrashEvents int
	// Crash is the chance, per delivery, that the receiver dies after
	// storing the dedupe key and before the side effect.
	Crash float64

	// RetentionEvents is how many events each retention row replays.
	RetentionEvents int

	// JitterDeliveries is how many deliveries fail together in the jitter
	// experiment.
	JitterDeliveries int
}

// Article returns the reference article's configuration: seed 20261023,
// 10,000 events over 500 accounts (60 % credits), duplicate 0.03, lost
// response 0.02, concurrent 0.01, shuffle 0.10 within 20 positions,
// same-second plan pairs 0.05; 2,000 crash events at 0.01; 10,000 events
// per retention row; 1,000 failing deliveries for jitter.
func Article() Config {
	return Config{
		Seed:             20261023,
		Events:           10000,
		Accounts:         500,
		CreditShare:      0.6,
		SameSecond:       0.05,
		Duplicate:        0.03,
		LostResponse:     0.02,
		Concurrent:       0.01,
		Shuffle:          0.10,
		ShuffleWindow:    20,
		CrashEvents:      2000,
		Crash:            0.01,
		RetentionEvents:  10000,
		JitterDeliveries: 1000,
	}
}

// Small is [Article] scaled down to run in seconds, for tests and quick
// looks: 300 events over 50 accounts, 150 crash events with a crash chance
// of 0.04 (so that a small run still crashes several times), 2,000 events
// per retention row and 300 failing deliveries, and 2 connections per
// design, so that tests running side by side leave a shared server's
// connections to others. The seed and the other chances are the article's.
func Small() Config {
	c := Article()
	c.Events = 300
	c.Accounts = 50
	c.CrashEvents = 150
	c.Crash = 0.04
	c.RetentionEvents = 2000
	c.JitterDeliveries = 300
	c.Connections = 2
	return c
}

func (c Config) connections() int {
	if c.Connections == 0 {
		return defaultConnections
	}
	return c.Connections
}

// Validate reports the first setting that cannot run, saying what is
// wrong and what would be accepted.
func (c Config) Validate() error {
	counts := []struct {
		name string
		n    int
	}{
		{"Events", c.Events}, {"Accounts", c.Accounts}, {"CrashEvents", c.CrashEvents},
		{"RetentionEvents", c.RetentionEvents}, {"JitterDeliveries", c.JitterDeliveries},
	}
	for _, f := range counts {
		if f.n < 1 {
			return fmt.Errorf("sim config: %s is %d; it must be at least 1", f.name, f.n)
		}
	}
	chances := []struct {
		name string
		p    float64
	}{
		{"CreditShare", c.CreditShare}, {"SameSecond", c.SameSecond}, {"Duplicate", c.Duplicate},
		{"LostResponse", c.LostResponse}, {"Concurrent", c.Concurrent}, {"Shuffle", c.Shuffle}, {"Crash", c.Crash},
	}
	for _, f := range chances {
		if !(f.p >= 0 && f.p <= 1) {
			return fmt.Errorf("sim config: %s is %v; a chance must be between 0 and 1", f.name, f.p)
		}
	}
	// A lost response or a crash on every attempt would retry for ever.
	if c.LostResponse >= 1 {
		return errors.New("sim config: LostResponse is 1, so every delivery would be retried for ever; use a chance below 1")
	}
	if c.Crash >= 1 {
		return errors.New("sim config: Crash is 1, so the receiver would crash on every retry for ever; use a chance below 1")
	}
	if c.ShuffleWindow < 0 {
		return fmt.Errorf("sim config: ShuffleWindow is %d; it must be zero or more positions", c.ShuffleWindow)
	}
	if c.Connections < 0 {
		return fmt.Errorf("sim config: Connections is %d; use zero for the default (%d) or a positive number", c.Connections, defaultConnections)
	}
	if c.MaxInFlight < 0 {
		return fmt.Errorf("sim config: MaxInFlight is %d; use zero for no cap or a positive number", c.MaxInFlight)
	}
	return nil
}
