package bench

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
)

// Scenario is one workload. Events go to tenants in turn; every endpoint of
// a tenant subscribes to every type, so an event makes EndpointsPerTenant
// deliveries.
type Scenario struct {
	// Name chooses the scenario on the command line.
	Name string
	// About says in one line what the scenario shows.
	About string
	// Tenants is how many tenants share the events. Defaults to 1.
	Tenants int
	// EndpointsPerTenant is how many endpoints receive each event.
	// Defaults to 1.
	EndpointsPerTenant int
	// Hanging is the fraction of all endpoints that hold every request
	// until the dispatcher's timeout. Their deliveries are not measured. A
	// scenario with hanging endpoints runs twice: first as a control in
	// which those endpoints answer at once (still unmeasured), then with
	// them hanging, so the healthy endpoints' latency can be compared.
	Hanging float64
	// FailFirst is the fraction of deliveries whose first attempt is
	// answered 500.
	FailFirst float64
	// Rate is how many events per second the producers publish while the
	// dispatcher runs, for Duration. Zero means a burst: Events are
	// published first, then the dispatcher starts and drains them.
	Rate     float64
	Duration time.Duration
	// Events is the size of a burst.
	Events int
	// EventsPerTx is how many events one producer transaction publishes.
	// Defaults to 1.
	EventsPerTx int
	// Warmup is left out of the sustained rate and, for events committed
	// in it, of the latency.
	Warmup time.Duration
	// Baseline makes the scenario push Events no-op River jobs through the
	// database instead of running Herald.
	Baseline bool
	// Aged makes the scenario the comparison of a fresh database with one
	// holding History deliveries of history (see aged.go).
	Aged    bool
	History int
	// shrunkTo is the size Shrunk was given, which the aged scenario
	// passes on to the scenarios it runs.
	shrunkTo int
	// Load, when set (LoadHTTP or LoadSQL), publishes from a load
	// generator in a process of its own instead of in-process producers:
	// through a child api process, or with herald.publish. The dispatcher
	// runs while it publishes, a burst included.
	Load string
	// PerRequest is how many events one load request carries. Defaults
	// to 1.
	PerRequest int
	// Clients is how many load requests are in flight at once. Defaults
	// to DefaultLoadClients.
	Clients int
	// Objects is how many objects the events are about, in turn (event i
	// is about object i mod Objects, so each object's versions follow
	// each other); a multiple of Tenants. Zero means every event is about
	// an object of its own.
	Objects int
	// Ordering is the endpoints' ordering. Empty means store.OrderingNone.
	Ordering store.Ordering
	// Filtered gives endpoint e of each tenant the filter
	// filteredEndpointFilter(e), which a tenth of the events pass: an event
	// then makes a tenth of EndpointsPerTenant deliveries (a multiple of
	// filterBuckets).
	Filtered bool
	// Noisy, when set, adds a noisy tenant (see Noisy). The scenario then
	// runs twice: first as a control without it, then with it.
	Noisy *Noisy
	// Split runs Herald in split mode: the producers publish into a
	// producer database of their own (Config.NewProducerDatabase), from
	// which the dispatcher relays into Herald's. Its Postgres CPU counts
	// both databases' backends and its WAL is the server's, as always;
	// its rows and stored bytes are Herald's database's only.
	Split bool
}

// filterBuckets is how many slices the Filtered scenarios cut events into
// by amount: an endpoint's filter takes one slice.
const filterBuckets = 10

// filteredEndpointFilter is the filter of endpoint e of a tenant in a
// Filtered scenario: events whose amount is in the (e mod filterBuckets)th
// hundred above 4200, a tenth of them (see producers.event).
func filteredEndpointFilter(e int) string {
	low := 4200 + 100*(e%filterBuckets)
	return fmt.Sprintf("data.amount >= %d and data.amount < %d", low, low+100)
}

// filterBucket is the slice of event i, which the endpoints e with e mod
// filterBuckets equal to it receive.
func filterBucket(i int) int { return i % 1000 / 100 }

// DefaultLoadClients is how many requests a load generator keeps in
// flight: 32.
const DefaultLoadClients = 32

// The scenarios, in the order `bench` runs them. baseline runs right before
// burst so the two compare the machine at the same moment, and sql-publish
// right before the http scenarios it is their baseline for.
var Scenarios = []Scenario{
	{
		Name:     "baseline",
		About:    "100,000 no-op River jobs through the same database: the queue's own limit",
		Events:   100_000,
		Warmup:   2 * time.Second,
		Baseline: true,
	},
	{
		Name:        "burst",
		About:       "100,000 events published at once to 50 endpoints, then drained",
		Tenants:     50,
		Events:      100_000,
		EventsPerTx: 100,
		Warmup:      2 * time.Second,
	},
	{
		Name:        "ordered",
		About:       "burst with ordering: object: 100,000 events about 1,000 objects to 50 ordered endpoints, then drained",
		Tenants:     50,
		Events:      100_000,
		EventsPerTx: 100,
		Warmup:      2 * time.Second,
		Objects:     1000,
		Ordering:    store.OrderingObject,
	},
	{
		Name:     "steady",
		About:    "1,000 events/s for 60 s to 10 endpoints",
		Tenants:  10,
		Rate:     1000,
		Duration: 60 * time.Second,
		Warmup:   10 * time.Second,
	},
	{
		Name:     "ordered-steady",
		About:    "steady with ordering: object: 1,000 events/s for 60 s about 1,000 objects to 10 ordered endpoints",
		Tenants:  10,
		Rate:     1000,
		Duration: 60 * time.Second,
		Warmup:   10 * time.Second,
		Objects:  1000,
		Ordering: store.OrderingObject,
	},
	{
		Name:     "split",
		About:    "steady in split mode: 1,000 events/s for 60 s published into a producer database, relayed into Herald's, to 10 endpoints",
		Tenants:  10,
		Rate:     1000,
		Duration: 60 * time.Second,
		Warmup:   10 * time.Second,
		Split:    true,
	},
	{
		Name:               "fanout",
		About:              "20 events/s for 30 s, each to 100 endpoints",
		EndpointsPerTenant: 100,
		Rate:               20,
		Duration:           30 * time.Second,
		Warmup:             5 * time.Second,
	},
	{
		Name:               "filtered",
		About:              "fanout's 2,000 deliveries/s through filters: 400 events/s for 30 s to 50 endpoints, each filtering for a tenth of them",
		EndpointsPerTenant: 50,
		Rate:               400,
		Duration:           30 * time.Second,
		Warmup:             5 * time.Second,
		Filtered:           true,
	},
	{
		Name:     "isolation",
		About:    "500 events/s for 40 s to 20 endpoints, 2 of which hang until the timeout",
		Tenants:  20,
		Hanging:  0.1,
		Rate:     500,
		Duration: 40 * time.Second,
		Warmup:   5 * time.Second,
	},
	{
		Name:     "noisy-tenant",
		About:    "20 tenants at 200 events/s for 40 s, beside a tenant whose 500 endpoints hang until the timeout, flooded with 10 events/s",
		Tenants:  20,
		Rate:     200,
		Duration: 40 * time.Second,
		Warmup:   5 * time.Second,
		Noisy:    &Noisy{Endpoints: 500, Rate: 10},
	},
	{
		Name:     "noisy-tenant-shared",
		About:    "noisy-tenant with the 500 hanging endpoints and their flood in one of the 20 tenants, beside its healthy endpoint",
		Tenants:  20,
		Rate:     200,
		Duration: 40 * time.Second,
		Warmup:   5 * time.Second,
		Noisy:    &Noisy{Endpoints: 500, Rate: 10, Shared: true},
	},
	{
		Name:      "failing",
		About:     "500 events/s for 30 s to 10 endpoints; 20% of first attempts answer 500",
		Tenants:   10,
		FailFirst: 0.2,
		Rate:      500,
		Duration:  30 * time.Second,
		Warmup:    5 * time.Second,
	},
	{
		Name:   "sql-publish",
		About:  "20,000 events, each its own SELECT herald.publish, from 32 clients in a process of their own, to 1 endpoint",
		Events: 20_000,
		Warmup: 2 * time.Second,
		Load:   LoadSQL,
	},
	{
		Name:   "http-burst",
		About:  "20,000 single-event POST …/messages from 32 clients in a process of their own, to 1 endpoint",
		Events: 20_000,
		Warmup: 2 * time.Second,
		Load:   LoadHTTP,
	},
	{
		Name:       "http-batch",
		About:      "the same 20,000 events in batches of 100 (POST …/messages/batch)",
		Events:     20_000,
		Warmup:     time.Second,
		Load:       LoadHTTP,
		PerRequest: 100,
	},
	{
		Name:     "http-steady-50",
		About:    "50 single-event requests/s for 40 s to 1 endpoint: the cost of a delivery at a trickle",
		Rate:     50,
		Duration: 40 * time.Second,
		Warmup:   5 * time.Second,
		Load:     LoadHTTP,
	},
	{
		Name:     "http-steady-1000",
		About:    "1,000 single-event requests/s for 40 s to 1 endpoint",
		Rate:     1000,
		Duration: 40 * time.Second,
		Warmup:   5 * time.Second,
		Load:     LoadHTTP,
	},
	{
		Name:    "aged",
		About:   "burst, steady, a 100,000-delivery replay and the pages on a database with 30 days of history, beside a fresh one",
		Aged:    true,
		History: DefaultAgedHistory,
	},
}

// Select returns the scenarios named in a comma-separated list, in the
// order given; "all" or "" means every scenario.
func Select(names string) ([]Scenario, error) {
	if names == "" || names == "all" {
		return Scenarios, nil
	}
	var out []Scenario
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		s, ok := find(name)
		if !ok {
			known := make([]string, len(Scenarios))
			for i, s := range Scenarios {
				known[i] = s.Name
			}
			return nil, fmt.Errorf("unknown scenario %q; choose from %s, or all", name, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

func find(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// Shrunk returns the scenario scaled down to about n deliveries (jobs, for
// the baseline), never more than it has, with its warm-up scaled alike: the
// smoke test runs every scenario this way in a few seconds.
func (s Scenario) Shrunk(n int) Scenario {
	if s.Aged {
		if n > 0 {
			s.shrunkTo, s.History = n, min(s.History, n*20)
		}
		return s
	}
	total := int(float64(s.events()) * s.deliveriesPerEvent())
	if n <= 0 || n >= total {
		return s
	}
	f := float64(n) / float64(total)
	if s.Rate > 0 {
		s.Duration = time.Duration(float64(s.Duration) * f)
	} else {
		s.Events = max(int(float64(s.Events)*f), 1)
	}
	s.Warmup = time.Duration(float64(s.Warmup) * f)
	if s.Noisy != nil {
		noisy := *s.Noisy
		noisy.Endpoints = max(int(math.Round(float64(noisy.Endpoints)*f)), 1)
		s.Noisy = &noisy
	}
	return s
}

// events is how many events the scenario publishes (or jobs it inserts).
func (s Scenario) events() int {
	if s.Rate > 0 {
		return int(math.Round(s.Rate * s.Duration.Seconds()))
	}
	return s.Events
}

func (s Scenario) tenants() int            { return max(s.Tenants, 1) }
func (s Scenario) endpointsPerTenant() int { return max(s.EndpointsPerTenant, 1) }

// deliveriesPerEvent is how many deliveries an event makes on average.
func (s Scenario) deliveriesPerEvent() float64 {
	if s.Filtered {
		return float64(s.endpointsPerTenant()) / filterBuckets
	}
	return float64(s.endpointsPerTenant())
}
func (s Scenario) eventsPerTx() int { return max(s.EventsPerTx, 1) }
func (s Scenario) perRequest() int  { return max(s.PerRequest, 1) }
func (s Scenario) clients() int {
	if s.Clients > 0 {
		return s.Clients
	}
	return DefaultLoadClients
}

// endpoints is how many endpoints the scenario has.
func (s Scenario) endpoints() int { return s.tenants() * s.endpointsPerTenant() }

// noisyEndpoints is how many endpoints a noisy tenant adds; 0 without one.
func (s Scenario) noisyEndpoints() int {
	if s.Noisy == nil {
		return 0
	}
	return s.Noisy.Endpoints
}

// hanging is how many of the endpoints hang.
func (s Scenario) hanging() int { return int(math.Round(s.Hanging * float64(s.endpoints()))) }
