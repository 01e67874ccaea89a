package chaos

import (
	"errors"
	"fmt"
	"time"
)

// Config sets the size of a run, the consumer's faults and the dispatchers'
// settings. [Full] is the documented run, [Small] the one make test runs.
type Config struct {
	// Seed fixes the producers' choice of objects and rollbacks and the
	// consumer's faults. The kills and the outage happen at points of
	// progress, not at fixed times, so their exact effect varies by run.
	Seed uint64
	// Events is how many events the producers commit.
	Events int
	// Objects is how many objects the events are about; each event bumps
	// one object's version.
	Objects int
	// Producers is how many goroutines publish at once.
	Producers int
	// Rollback is the chance that a producer, before committing an event,
	// publishes one in a transaction it rolls back. Such events must never
	// reach the consumer.
	Rollback float64
	// Faults are the consumer endpoint's misbehaviours.
	Faults Faults

	// Dispatchers is how many dispatcher processes run at once.
	Dispatchers int
	// Kills is how many times a dispatcher process is killed with SIGKILL
	// (and started again), spread over the run, taking turns.
	Kills int
	// Downtime is how long a killed dispatcher stays down before it is
	// started again.
	Downtime time.Duration
	// Workers is each dispatcher's --workers.
	Workers int
	// MaxConns is each dispatcher's --max-conns.
	MaxConns int
	// SenderTimeout is the dispatchers' --timeout: how long an attempt
	// waits for the consumer's answer.
	SenderTimeout time.Duration
	// RescueAfter is the dispatchers' --rescue-stuck-after: how long the
	// job of a killed dispatcher stays running before it is sent again.
	RescueAfter time.Duration
	// RetryBase and RetryCap are the dispatchers' --retry-base and
	// --retry-cap.
	RetryBase, RetryCap time.Duration

	// Settle bounds the wait, after the producers finished and the last
	// fault, for every delivery to succeed and the consumer to apply it.
	Settle time.Duration
}

// Full is the documented run: 20,000 events about 200 objects, 2 % of
// the producers' transactions rolled back, the consumer answering 500 to
// 5 % of requests, holding 2 % past the sender's 1 s timeout, dropping the
// connection after storing 2 % and answering 2 % too late; two
// dispatchers, killed six times in turns.
func Full() Config {
	return Config{
		Seed:          20261202,
		Events:        20000,
		Objects:       200,
		Producers:     8,
		Rollback:      0.02,
		Faults:        Faults{Fail: 0.05, Hang: 0.02, Drop: 0.02, Late: 0.02},
		Dispatchers:   2,
		Kills:         6,
		Downtime:      time.Second,
		Workers:       32,
		MaxConns:      8,
		SenderTimeout: time.Second,
		RescueAfter:   3 * time.Second,
		RetryBase:     100 * time.Millisecond,
		RetryCap:      2 * time.Second,
		Settle:        5 * time.Minute,
	}
}

// Small is Full scaled down for make test: 1,000 events about 50 objects,
// the same faults, two kills.
func Small() Config {
	c := Full()
	c.Events = 1000
	c.Objects = 50
	c.Producers = 4
	c.Kills = 2
	c.Downtime = 300 * time.Millisecond
	c.Workers = 16
	c.MaxConns = 5
	c.Settle = 2 * time.Minute
	return c
}

// Validate reports settings that cannot make a run.
func (c Config) Validate() error {
	var errs []error
	for _, n := range []struct {
		name  string
		value int
	}{{"Events", c.Events}, {"Objects", c.Objects}, {"Producers", c.Producers}, {"Dispatchers", c.Dispatchers}, {"Workers", c.Workers}, {"MaxConns", c.MaxConns}} {
		if n.value < 1 {
			errs = append(errs, fmt.Errorf("chaos: %s is %d; want at least 1", n.name, n.value))
		}
	}
	if c.Kills < 0 {
		errs = append(errs, fmt.Errorf("chaos: Kills is %d; want 0 or more", c.Kills))
	}
	if c.Kills > 0 && c.Dispatchers < 2 {
		errs = append(errs, errors.New("chaos: killing a dispatcher needs at least 2, so that one keeps working"))
	}
	if c.Rollback < 0 || c.Rollback >= 1 {
		errs = append(errs, fmt.Errorf("chaos: Rollback is %v; want a chance in [0, 1)", c.Rollback))
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"Downtime", c.Downtime}, {"SenderTimeout", c.SenderTimeout}, {"RescueAfter", c.RescueAfter}, {"RetryBase", c.RetryBase}, {"RetryCap", c.RetryCap}, {"Settle", c.Settle}} {
		if d.value <= 0 {
			errs = append(errs, fmt.Errorf("chaos: %s is %s; want a positive duration", d.name, d.value))
		}
	}
	if err := c.Faults.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
