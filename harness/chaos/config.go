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

	// GoneShare is the share of events published with the type only the
	// second endpoint receives. That endpoint answers 410 Gone until
	// GoneUntil of the run's events are stored, which disables it; then
	// it is enabled again and replayed with only_failed. Zero leaves the
	// second endpoint out.
	GoneShare float64
	// GoneUntil is the share of the events stored when the second
	// endpoint stops answering 410 and is enabled and replayed, in (0, 1).
	GoneUntil float64
	// OrderedShare is the share of events published with the type only
	// the third endpoint receives. That endpoint is created with ordering
	// object: the consumer must see each object's versions of that type in
	// increasing order, each sent only once the one before was answered
	// 2xx. Zero leaves the third endpoint out.
	OrderedShare float64
	// Deferred is the share of events whose first request the consumer
	// answers 429 with a Retry-After of 20 s, until the resends and the
	// forced ends are done: deliveries waiting for a retry, for those two
	// to take.
	Deferred float64
	// Resends is how many pending deliveries, in flight or waiting for a
	// retry, are resent (replay.ResendTx), 30 % of the way through the run.
	Resends int
	// ForcedEnds is how many delivery jobs waiting for a retry are ended
	// by force, as an operator or a bug might: half cancelled with
	// River's JobCancel, half set to discarded with an UPDATE. The
	// reconciler must give each delivery a new job.
	ForcedEnds int
	// ReconcileInterval is the dispatchers' --reconcile-interval.
	ReconcileInterval time.Duration
	// BlackHole is how long dispatcher 0's database connections are black
	// holes (a proxy between it and Postgres stops forwarding without
	// closing anything); then the proxy forwards new connections and the
	// dispatcher must deliver again within dispatcher.RecoveryBound. Zero
	// means no black hole.
	BlackHole time.Duration
	// Poison is the number of the event (0 for the first) that kills the
	// consumer's worker process whenever it applies it; -1 means none.
	// The process is started again each time, and the event must become
	// a dead letter after ConsumerMaxAttempts while the others flow.
	Poison int
	// ConsumerLease is the consumer Workers' LeaseDuration: how long a
	// crash holds up the events claimed with the poison one.
	ConsumerLease time.Duration
	// ConsumerMaxAttempts is the consumer Workers' MaxAttempts.
	ConsumerMaxAttempts int

	// Settle bounds the wait, after the producers finished and the last
	// fault, for every delivery to succeed and the consumer to apply it.
	Settle time.Duration
}

// Full is the documented run: 20,000 events about 200 objects, 2 % of
// the producers' transactions rolled back, the consumer answering 500 to
// 5 % of requests, holding 2 % past the sender's 1 s timeout, dropping the
// connection after storing 2 % and answering 2 % too late; two
// dispatchers, killed six times in turns. Besides: 20 % of the events go
// to a third endpoint with ordering object, under the same faults; 1 % of
// the events go to a second endpoint that answers 410 Gone for the first 35 % of the run and
// is then enabled and replayed; 10 pending deliveries are resent and 6
// delivery jobs ended by force; dispatcher 0's database connections are
// black holes for 10 s; and event 4,000 kills the consumer's worker process
// whenever it is applied (a lease of 2 s, 3 attempts).
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

		GoneShare:           0.01,
		GoneUntil:           0.35,
		OrderedShare:        0.2,
		Deferred:            0.01,
		Resends:             10,
		ForcedEnds:          6,
		ReconcileInterval:   2 * time.Second,
		BlackHole:           10 * time.Second,
		Poison:              4000,
		ConsumerLease:       2 * time.Second,
		ConsumerMaxAttempts: 3,
	}
}

// Small is Full scaled down for make test: 1,000 events about 50 objects,
// the same faults, two kills, 3 % of the events to the 410 endpoint, 4
// resends, 2 forced ends, a 2 s black hole and event 200 as the poison.
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
	c.GoneShare = 0.03
	c.Deferred = 0.05
	c.Resends = 4
	c.ForcedEnds = 2
	c.BlackHole = 2 * time.Second
	c.Poison = 200
	return c
}

// Validate reports settings that cannot make a run.
func (c Config) Validate() error {
	var errs []error
	for _, n := range []struct {
		name  string
		value int
	}{{"Events", c.Events}, {"Objects", c.Objects}, {"Producers", c.Producers}, {"Dispatchers", c.Dispatchers}, {"Workers", c.Workers}, {"MaxConns", c.MaxConns}, {"ConsumerMaxAttempts", c.ConsumerMaxAttempts}} {
		if n.value < 1 {
			errs = append(errs, fmt.Errorf("chaos: %s is %d; want at least 1", n.name, n.value))
		}
	}
	for _, n := range []struct {
		name  string
		value int
	}{{"Kills", c.Kills}, {"Resends", c.Resends}, {"ForcedEnds", c.ForcedEnds}} {
		if n.value < 0 {
			errs = append(errs, fmt.Errorf("chaos: %s is %d; want 0 or more", n.name, n.value))
		}
	}
	if c.Poison < -1 || c.Poison >= c.Events {
		errs = append(errs, fmt.Errorf("chaos: Poison is %d; want the number of one of the %d events, or -1 for none", c.Poison, c.Events))
	}
	if c.Deferred < 0 || c.Deferred >= 0.5 {
		errs = append(errs, fmt.Errorf("chaos: Deferred is %v; want a share in [0, 0.5)", c.Deferred))
	}
	if (c.Resends > 0 || c.ForcedEnds > 0) && c.Deferred == 0 {
		errs = append(errs, errors.New("chaos: Resends and ForcedEnds take deliveries waiting for a retry, which Deferred makes; set it"))
	}
	if c.GoneShare < 0 || c.GoneShare >= 0.5 {
		errs = append(errs, fmt.Errorf("chaos: GoneShare is %v; want a share in [0, 0.5)", c.GoneShare))
	}
	if c.OrderedShare < 0 || c.OrderedShare >= 0.5 {
		errs = append(errs, fmt.Errorf("chaos: OrderedShare is %v; want a share in [0, 0.5)", c.OrderedShare))
	}
	if c.GoneShare > 0 && (c.GoneUntil <= 0 || c.GoneUntil >= 1) {
		errs = append(errs, fmt.Errorf("chaos: GoneUntil is %v; want a share of the run in (0, 1)", c.GoneUntil))
	}
	if c.BlackHole < 0 {
		errs = append(errs, fmt.Errorf("chaos: BlackHole is %s; want 0 (none) or a positive duration", c.BlackHole))
	}
	if (c.Kills > 0 || c.BlackHole > 0) && c.Dispatchers < 2 {
		errs = append(errs, errors.New("chaos: killing a dispatcher or black-holing its database needs at least 2 dispatchers, so that one keeps working"))
	}
	if c.Rollback < 0 || c.Rollback >= 1 {
		errs = append(errs, fmt.Errorf("chaos: Rollback is %v; want a chance in [0, 1)", c.Rollback))
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"Downtime", c.Downtime}, {"SenderTimeout", c.SenderTimeout}, {"RescueAfter", c.RescueAfter}, {"RetryBase", c.RetryBase}, {"RetryCap", c.RetryCap}, {"Settle", c.Settle},
		{"ReconcileInterval", c.ReconcileInterval}, {"ConsumerLease", c.ConsumerLease}} {
		if d.value <= 0 {
			errs = append(errs, fmt.Errorf("chaos: %s is %s; want a positive duration", d.name, d.value))
		}
	}
	if err := c.Faults.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
