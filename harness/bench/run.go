package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/store"
)

// Defaults of Config.
const (
	// DefaultProducers is how many goroutines publish at once.
	DefaultProducers = 16
	// DefaultMaxDrain bounds the wait for deliveries once publishing ended.
	DefaultMaxDrain = 5 * time.Minute
	// DefaultProgressEvery is how often a progress line is written.
	DefaultProgressEvery = 2 * time.Second
)

// LoopbackCIDR is the range the bench's receivers listen in; the
// dispatcher's SSRF guard must allow it.
const LoopbackCIDR = "127.0.0.0/8"

// StartDispatcher starts Herald's dispatcher on the database at url, whose
// endpoint secrets are sealed under secretKey (HERALD_SECRET_KEY's form),
// allowing deliveries to LoopbackCIDR. A source URL other than "" puts it
// in split mode, relaying from that producer database under the name
// SourceName.
type StartDispatcher func(ctx context.Context, url, secretKey, source string) (RunningDispatcher, error)

// SourceName is the name the split scenarios give their producer
// database (--source-database-url bench=URL).
const SourceName = "bench"

// RunningDispatcher is a dispatcher a run started.
type RunningDispatcher interface {
	// Usage is its CPU time since it started and its memory.
	Usage() (Usage, error)
	// Stop stops it, letting in-flight attempts finish, and returns its
	// final usage.
	Stop(ctx context.Context) (Usage, error)
}

// Config configures Run.
type Config struct {
	// NewDatabase returns the URL of a fresh migrated database for one
	// scenario run and a function that drops it. Required.
	NewDatabase func(ctx context.Context) (url string, drop func() error, err error)
	// StartDispatcher runs the system under test. Required unless only the
	// baseline runs.
	StartDispatcher StartDispatcher
	// Dispatcher names how the dispatcher runs, for the report.
	Dispatcher string
	// Baseline configures the baseline's River client.
	Baseline BaselineConfig
	// Producers is how many goroutines publish at once. Defaults to 16.
	// Zero means the default.
	Producers int
	// MaxDrain bounds the wait for deliveries after publishing ended; a
	// run that hits it reports what arrived and says so. Defaults to 5
	// minutes. Zero means the default.
	MaxDrain time.Duration
	// Progress receives a line every ProgressEvery while a scenario runs.
	// Nil means no progress output.
	Progress io.Writer
	// ProgressEvery defaults to 2 s. Zero means the default.
	ProgressEvery time.Duration
	// NewProducerDatabase returns the URL of a fresh database with the
	// producer's outbox installed (migrations/producer) and a function that
	// drops it. Required by the Split scenarios only.
	NewProducerDatabase func(ctx context.Context) (url string, drop func() error, err error)
	// NewFilledDatabase returns a function that makes a database for the
	// aged scenario, migrated and then filled by fill (named after age,
	// "fresh" or "aged"), like NewDatabase's. Required by the aged
	// scenario only.
	NewFilledDatabase func(ctx context.Context, age string, fill func(context.Context, *pgxpool.Pool) error) (func(context.Context) (string, func() error, error), error)
	// APIPath is the api program the LoadHTTP scenarios run as a child
	// process, with APIArgs. Required for them.
	APIPath string
	APIArgs []string
	// Load starts the load generator of the scenarios with a Load.
	// Required for them.
	Load LoadProcess
}

// Run runs the scenarios one after the other and reports on all of them.
//
// When a scenario fails, Run returns the report of the scenarios before it
// with the error.
func Run(ctx context.Context, cfg Config, scenarios []Scenario) (report Report, err error) {
	if cfg.NewDatabase == nil {
		return Report{}, errors.New("bench: Config.NewDatabase is nil")
	}
	for _, s := range scenarios {
		if !s.Baseline && cfg.StartDispatcher == nil {
			return Report{}, fmt.Errorf("bench: scenario %s needs Config.StartDispatcher", s.Name)
		}
		if s.Split && cfg.NewProducerDatabase == nil {
			return Report{}, fmt.Errorf("bench: scenario %s needs Config.NewProducerDatabase", s.Name)
		}
		if s.Load != "" && cfg.Load.Path == "" || s.Load == LoadHTTP && cfg.APIPath == "" {
			return Report{}, fmt.Errorf("bench: scenario %s needs Config.Load and, through the API, Config.APIPath", s.Name)
		}
	}
	r := &runner{cfg: cfg}
	r.cfg.Producers = cmp.Or(cfg.Producers, DefaultProducers)
	r.cfg.MaxDrain = cmp.Or(cfg.MaxDrain, DefaultMaxDrain)
	r.cfg.ProgressEvery = cmp.Or(cfg.ProgressEvery, DefaultProgressEvery)

	report = Report{Date: time.Now().UTC(), Dispatcher: cfg.Dispatcher}
	defer func() {
		report.Machine = r.machine
		report.Machine.CPUs = runtime.NumCPU()
		report.Machine.GoVersion = runtime.Version()
		report.Machine.Kernel = kernel()
		report.Machine.MemoryMB = memoryMB()
		report.Targets = evaluate(report)
	}()
	for _, s := range scenarios {
		var results []Result
		switch {
		case s.Aged:
			if cfg.NewFilledDatabase == nil {
				return report, fmt.Errorf("scenario %s needs Config.NewFilledDatabase", s.Name)
			}
			results, err = r.aged(ctx, s, &report)
		case s.Baseline:
			var res Result
			res, err = r.baseline(ctx, s)
			results = append(results, res)
		case s.Noisy != nil:
			control := s
			control.Name = noisyControl(s.Name)
			control.About = "the " + s.Name + " run without its noisy tenant"
			control.Noisy = nil
			var a, b Result
			if a, err = r.herald(ctx, control, false); err == nil {
				b, err = r.herald(ctx, s, true)
				results = append(results, a, b)
			}
		case s.hanging() > 0:
			control := s
			control.Name = isolationControl
			control.About = "the isolation run with its hanging endpoints answering at once"
			var a, b Result
			if a, err = r.herald(ctx, control, false); err == nil {
				b, err = r.herald(ctx, s, true)
				results = append(results, a, b)
			}
		default:
			var res Result
			res, err = r.herald(ctx, s, false)
			results = append(results, res)
		}
		if err != nil {
			return report, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		report.Results = append(report.Results, results...)
	}
	return report, nil
}

type runner struct {
	cfg     Config
	machine Machine
}

// stage is a scenario run's database and statistics connection.
type stage struct {
	url   string
	stats *pgx.Conn
	drop  func() error
}

func (r *runner) newStage(ctx context.Context) (*stage, error) {
	return r.stageOn(ctx, r.cfg.NewDatabase)
}

// stageOn is newStage on a database newDB makes.
func (r *runner) stageOn(ctx context.Context, newDB func(context.Context) (string, func() error, error)) (*stage, error) {
	url, drop, err := newDB(ctx)
	if err != nil {
		return nil, err
	}
	stats, err := pgx.Connect(ctx, url)
	if err != nil {
		_ = drop()
		return nil, fmt.Errorf("connect to the bench database: %w", err)
	}
	if r.machine.Postgres == "" {
		var maxConns string
		err := stats.QueryRow(ctx, serverSettings).Scan(&r.machine.Postgres, &r.machine.SynchronousCommit,
			&r.machine.Fsync, &r.machine.SharedBuffers, &maxConns)
		if err != nil {
			_ = stats.Close(ctx)
			_ = drop()
			return nil, fmt.Errorf("read server settings: %w", err)
		}
	}
	return &stage{url: url, stats: stats, drop: drop}, nil
}

func (s *stage) close(ctx context.Context) error {
	_ = s.stats.Close(context.WithoutCancel(ctx))
	return s.drop()
}

// startDispatcher starts the dispatcher for the run named name and says
// how long it took to be ready (see StartDispatcher).
func (r *runner) startDispatcher(ctx context.Context, name, url, key, source string) (RunningDispatcher, error) {
	start := time.Now()
	d, err := r.cfg.StartDispatcher(ctx, url, key, source)
	if err != nil {
		return nil, err
	}
	r.progressf("%s: dispatcher ready in %.1f s", name, time.Since(start).Seconds())
	return d, nil
}

// herald runs one scenario through Herald. With hang, the scenario's
// hanging endpoints hang; without, they answer at once (the isolation
// control). Either way their deliveries are not measured.
func (r *runner) herald(ctx context.Context, s Scenario, hang bool) (res Result, err error) {
	st, err := r.newStage(ctx)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if dropErr := st.close(ctx); err == nil && dropErr != nil {
			err = fmt.Errorf("drop bench database: %w", dropErr)
		}
	}()
	return r.heraldOn(ctx, st, s, hang, secretbox.Generate())
}

// heraldOn runs one scenario through Herald on st's database, whose
// endpoint secrets are sealed under key; see herald. A Split scenario's
// producers publish into a producer database of its own, made for the run.
func (r *runner) heraldOn(ctx context.Context, st *stage, s Scenario, hang bool, key string) (res Result, err error) {
	publishURL, source := st.url, ""
	producerCPU := func() (time.Duration, error) { return 0, nil }
	if s.Split {
		url, drop, err := r.cfg.NewProducerDatabase(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("producer database: %w", err)
		}
		defer func() {
			if dropErr := drop(); err == nil && dropErr != nil {
				err = fmt.Errorf("drop producer database: %w", dropErr)
			}
		}()
		publishURL, source = url, url
		// The producer database's backends (the producers', the relay's)
		// count in the run's Postgres CPU.
		producerStats, err := pgx.Connect(ctx, url)
		if err != nil {
			return Result{}, fmt.Errorf("connect to the producer database: %w", err)
		}
		defer func() { _ = producerStats.Close(context.WithoutCancel(ctx)) }()
		producerCPU = func() (time.Duration, error) { return backendCPU(ctx, producerStats) }
	}
	rec := newRecorder(time.Now())
	specs := endpointSpecs(s, hang)
	rcv, err := startReceivers(rec, specs, s.FailFirst)
	if err != nil {
		return Result{}, err
	}
	defer rcv.close()

	tenants, noisy, err := createEndpoints(ctx, st.url, key, s, rcv.urls)
	if err != nil {
		return Result{}, err
	}
	// The setup's sessions are gone; from here on every write is the
	// run's.
	if err := waitAlone(ctx, st.stats, 10*time.Second); err != nil {
		return Result{}, err
	}
	before, err := readWrites(ctx, st.stats)
	if err != nil {
		return Result{}, err
	}
	cpuBefore, _ := readMachineCPU()
	res = Result{
		Scenario:    s.Name,
		About:       s.About,
		Endpoints:   len(specs),
		Hanging:     s.hanging() + s.noisyEndpoints(),
		Events:      s.events(),
		Deliveries:  expectedDeliveries(s, specs),
		LoadAverage: loadAverage(),
	}

	pool, err := database.Open(ctx, publishURL, database.Options{MaxConns: int32(r.cfg.Producers)})
	if err != nil {
		return Result{}, err
	}
	defer pool.Close()
	prod := &producers{pool: pool, rec: rec, tenants: tenants, count: r.cfg.Producers, perTx: s.eventsPerTx(), objects: s.Objects}

	progress := r.startProgress(s.Name, rec, res.Deliveries)
	defer progress.stop()

	var d RunningDispatcher
	var w window
	var gen *generator
	publishStart := time.Now()
	switch {
	case s.Load != "":
		if d, err = r.startDispatcher(ctx, s.Name, st.url, key, source); err != nil {
			return Result{}, err
		}
		progress.watch(d)
		gen, err = r.startGenerator(ctx, s, st.url, key, tenants, rec)
		w.start = rec.since(time.Now())
		publishStart = time.Now()
		if err == nil {
			err = gen.wait(ctx)
		}
	case s.Rate > 0:
		if d, err = r.startDispatcher(ctx, s.Name, st.url, key, source); err != nil {
			return Result{}, err
		}
		progress.watch(d)
		w.start = rec.since(time.Now())
		publishStart = time.Now()
		noise := make(chan error, 1)
		if noisy != "" {
			go func() { noise <- publishNoise(ctx, pool, noisy, s.Noisy.Rate, s.Duration) }()
		} else {
			noise <- nil
		}
		err = errors.Join(prod.publishAtRate(ctx, s.Rate, s.Duration), <-noise)
	default:
		err = prod.publishAll(ctx, s.Events)
	}
	publishEnd := time.Now()
	if err != nil {
		if d != nil {
			_, _ = d.Stop(ctx)
		}
		gen.stop(ctx)
		return Result{}, err
	}
	if d == nil {
		if d, err = r.startDispatcher(ctx, s.Name, st.url, key, source); err != nil {
			return Result{}, err
		}
		progress.watch(d)
		w.start = rec.since(time.Now())
	}
	res.PublishSeconds = publishEnd.Sub(publishStart).Seconds()
	if res.PublishSeconds > 0 {
		res.PublishPerSecond = float64(rec.published.Load()) / res.PublishSeconds
	}

	res.Problem = r.waitDelivered(ctx, rec, res.Deliveries)
	rcv.releaseHanging()
	pgCPU, err := backendCPU(ctx, st.stats)
	var sourceCPU time.Duration
	if err == nil {
		sourceCPU, err = producerCPU()
	}
	if err != nil {
		_, _ = d.Stop(ctx)
		return Result{}, err
	}
	res.PostgresCPUSeconds = (pgCPU + sourceCPU).Seconds()
	res.APICPUSeconds, err = gen.stop(ctx)
	if err != nil {
		_, _ = d.Stop(ctx)
		return Result{}, err
	}
	usage, stopErr := d.Stop(ctx)
	progress.stop()
	pool.Close()
	if stopErr != nil {
		return Result{}, fmt.Errorf("stop dispatcher: %w", stopErr)
	}
	if err := waitAlone(ctx, st.stats, 30*time.Second); err != nil {
		return Result{}, err
	}
	after, err := readWrites(ctx, st.stats)
	if err != nil {
		return Result{}, err
	}
	writes, err := writesBetween(ctx, st.stats, before, after)
	if err != nil {
		return Result{}, err
	}
	if cpuAfter, err := readMachineCPU(); err == nil {
		res.MachineBusy = cpuAfter.busySince(cpuBefore)
	}

	w.warmup = s.Warmup
	w.expected = res.Deliveries
	commits, arrivals, txs := rec.snapshot()
	a := analyse(commits, arrivals, w)
	res.CommitLatency = transactionLatency(txs, w)
	res.Delivered = a.delivered
	res.Duplicates = a.duplicates
	res.DeliveredPerSecond = a.sustained
	res.DrainSeconds = a.drain.Seconds()
	res.Latency = a.latency
	res.AttemptsPerDelivery = a.attempts
	res.Series = a.series
	res.DispatcherCPUSeconds = usage.CPU.Seconds()
	res.DispatcherPeakRSSMB = float64(usage.PeakRSS) / (1 << 20)
	res.Writes = writes
	if created := float64(s.events()) * s.deliveriesPerEvent(); created > 0 {
		res.CPUPerDeliveryMS = (res.DispatcherCPUSeconds + res.APICPUSeconds + res.PostgresCPUSeconds) * 1000 / created
		res.RowsPerDelivery = float64(writes.Rows()) / created
		res.WALBytesPerDelivery = float64(writes.WALBytes) / created
		res.StoredBytesPerDelivery = float64(writes.StoredBytes) / created
	}
	if a.unlinked > 0 {
		res.Problem = join(res.Problem, fmt.Sprintf("%d deliveries arrived for messages no producer committed", a.unlinked))
	}
	return res, nil
}

// waitDelivered waits until want deliveries were accepted or MaxDrain
// passed, and returns a problem when they were not all accepted.
func (r *runner) waitDelivered(ctx context.Context, rec *recorder, want int) string {
	deadline := time.Now().Add(r.cfg.MaxDrain)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for rec.delivered.Load() < int64(want) {
		select {
		case <-ctx.Done():
			return fmt.Sprintf("interrupted with %d of %d deliveries accepted", rec.delivered.Load(), want)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("only %d of %d deliveries were accepted within %s of the end of publishing", rec.delivered.Load(), want, r.cfg.MaxDrain)
		}
	}
	return ""
}

// endpointSpecs lays out a scenario's endpoints: the last ones are the
// hanging ones (answering at once when hang is false), and only the others
// are measured. A noisy tenant's endpoints come after them, and only when
// hang.
func endpointSpecs(s Scenario, hang bool) []endpointSpec {
	n, hanging := s.endpoints(), s.hanging()
	specs := make([]endpointSpec, n)
	for i := range specs {
		specs[i] = endpointSpec{behaviour: answerOK, measured: true}
		if i >= n-hanging {
			specs[i].measured = false
			if hang {
				specs[i].behaviour = hangUntilTimeout
			}
		}
	}
	if hang {
		for range s.noisyEndpoints() {
			specs = append(specs, endpointSpec{behaviour: hangUntilTimeout})
		}
	}
	return specs
}

// expectedDeliveries counts the deliveries to measured endpoints: event i
// goes to tenant i mod tenants, whose endpoints are the consecutive block
// of endpointsPerTenant starting at tenant·endpointsPerTenant (in a
// Filtered scenario, those of them whose filter it passes).
func expectedDeliveries(s Scenario, specs []endpointSpec) int {
	tenants, per, events := s.tenants(), s.endpointsPerTenant(), s.events()
	total := 0
	if s.Filtered {
		for i := range events {
			t := i % tenants
			for e := range per {
				if specs[t*per+e].measured && e%filterBuckets == filterBucket(i) {
					total++
				}
			}
		}
		return total
	}
	for t := range tenants {
		measured := 0
		for e := range per {
			if specs[t*per+e].measured {
				measured++
			}
		}
		eventsOfTenant := events / tenants
		if t < events%tenants {
			eventsOfTenant++
		}
		total += eventsOfTenant * measured
	}
	return total
}

// createEndpoints creates the scenario's tenants and their endpoints (one
// per receiver URL, in order) through the store, as an operator would, and
// returns the tenant ids. The URLs past the tenants' endpoints are a noisy
// tenant's (see Noisy): their tenant is returned as noisy, "" when there
// are none.
func createEndpoints(ctx context.Context, url, key string, s Scenario, urls []string) (tenants []string, noisy string, err error) {
	box, err := secretbox.Parse(key)
	if err != nil {
		return nil, "", err
	}
	pool, err := database.Open(ctx, url, database.Options{MaxConns: 2})
	if err != nil {
		return nil, "", err
	}
	defer pool.Close()
	guard := ssrf.New(netip.MustParsePrefix(LoopbackCIDR))
	// No endpoint cap: scenarios size their tenants to what they measure.
	st, err := store.New(pool, store.Config{Box: box, CheckURL: guard.CheckURL, MaxEndpointsPerTenant: -1})
	if err != nil {
		return nil, "", err
	}
	var types []string
	if s.Noisy != nil {
		// The healthy endpoints do not receive the noisy tenant's flood,
		// which shares a tenant with one of them in noisy-tenant-shared.
		types = []string{eventType}
	}
	tenants = make([]string, s.tenants())
	for t := range tenants {
		// Named after the scenario: the aged scenario runs several on one
		// database.
		tenants[t] = fmt.Sprintf("%s-%03d", s.Name, t)
		if _, err := st.CreateTenant(ctx, store.NewTenant{ID: tenants[t], Name: "bench " + s.Name}); err != nil {
			return nil, "", err
		}
		for e := range s.endpointsPerTenant() {
			n := store.NewEndpoint{TenantID: tenants[t], URL: urls[t*s.endpointsPerTenant()+e], Ordering: s.Ordering, EventTypes: types}
			if s.Filtered {
				n.Filter = filteredEndpointFilter(e)
			}
			_, err := st.CreateEndpoint(ctx, n)
			if err != nil {
				return nil, "", err
			}
		}
	}
	if rest := urls[s.endpoints():]; len(rest) > 0 {
		if noisy, err = createNoisy(ctx, st, s, tenants, rest); err != nil {
			return nil, "", err
		}
	}
	return tenants, noisy, nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
