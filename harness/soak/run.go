package soak

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/retention"
	"github.com/heraldhq/herald/store"
)

// Setup is what a run needs around it.
type Setup struct {
	// DatabaseURL is a migrated Herald database with no tenants, alone on
	// its server or nearly: the curve reads its size. Required.
	DatabaseURL string
	// Dispatcher is the path of a cmd/dispatcher binary (see
	// chaos.BuildDispatcher). Required.
	Dispatcher string
	// LogDir receives one log file per dispatcher. Required.
	LogDir string
	// Logger receives the run's progress. Nil discards it.
	Logger *slog.Logger
}

// settledPoll is how often the run looks whether the deliveries settled.
const settledPoll = time.Second

// Run runs cfg in setup and checks what it saw. It returns an error when
// the run could not be carried out (the database unreachable, the
// dispatcher missing); what the run found wrong is in Report.Problems.
func Run(ctx context.Context, cfg Config, setup Setup) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if setup.DatabaseURL == "" || setup.Dispatcher == "" || setup.LogDir == "" {
		return nil, errors.New("soak: Setup needs DatabaseURL, Dispatcher and LogDir")
	}
	logger := cmp.Or(setup.Logger, slog.New(slog.DiscardHandler))
	// The run's times are wall-clock readings (Round(0) drops the
	// monotonic one), as the dispatchers' log times are: mixing the two
	// kinds goes wrong when the wall clock is stepped during the run.
	started := time.Now().Round(0)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pool, err := database.Open(ctx, setup.DatabaseURL, database.Options{MaxConns: 4})
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	if err := preparePartitions(ctx, pool, cfg.Interval); err != nil {
		return nil, err
	}
	rc := newReceiver(cfg)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("soak: receiver: %w", err)
	}
	server := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(listener) }()
	defer server.Close()
	key := secretbox.Generate()
	if err := createEndpoints(ctx, pool, key, cfg, "http://"+listener.Addr().String()); err != nil {
		return nil, err
	}
	disp, err := startDispatchers(setup.Dispatcher, cfg.Dispatchers, dispatcherArgs(cfg, setup.DatabaseURL), key, setup.LogDir)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			disp.kill()
		}
	}()

	prod := newProducer(pool, cfg)
	rec, err := newRecorder(pool, cfg, prod, started)
	if err != nil {
		return nil, err
	}
	recording := make(chan struct{})
	recordCtx, stopRecording := context.WithCancel(ctx)
	defer stopRecording()
	go func() {
		defer close(recording)
		rec.run(recordCtx)
	}()

	logger.Info("soak: publishing the backlog", "events", cfg.Backlog)
	if err := prod.backlog(ctx); err != nil {
		return nil, err
	}
	logger.Info("soak: steady traffic", "rate", cfg.Rate, "for", cfg.Traffic, "aligned", cfg.AlignTraffic)
	if err := prod.run(ctx); err != nil {
		return nil, fmt.Errorf("soak: producer: %w", err)
	}
	logger.Info("soak: traffic over; waiting for the deliveries to settle", "within", cfg.Settle)
	end, err := settle(ctx, pool, cfg, disp)
	if err != nil {
		return nil, err
	}
	end.Elapsed, end.Phase, end.Published = time.Now().Round(0).Sub(started), Settling, prod.count()
	stopRecording()
	<-recording

	r := &Report{Config: cfg, Answers: rc.answered()}
	if err := disp.stop(); err != nil {
		r.problem("%v", err)
	}
	stopped = true
	if err := pool.QueryRow(ctx, defaultRows).Scan(&r.DefaultRows); err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	outcomes, err := readLogOutcomes(disp.logs())
	if err != nil {
		return nil, fmt.Errorf("soak: dispatcher logs: %w", err)
	}
	r.fill(cfg, rec, prod, rc, append(outcomes, rec.outcomes...), end, started)
	check(r)
	if cfg.ClockAhead == 0 && r.DefaultRows > 0 {
		r.problem("%d rows landed in the default partitions: a partition was missing or dropped under a writer", r.DefaultRows)
	}
	r.Runtime = time.Since(started)
	return r, nil
}

// fill sets what the run saw: the curve, the drops, the counts.
func (r *Report) fill(cfg Config, rec *recorder, prod *producer, rc *receiver, outcomes []PassOutcome, end Sample, started time.Time) {
	sortOutcomes(outcomes)
	main, lagging, from, to := prod.published()
	r.TrafficFrom, r.TrafficTo = from.Sub(started), to.Sub(started)
	r.Samples = append(rec.samples, end)
	r.PendingAtEnd, r.UndispatchedAtEnd = end.Pending, end.Undispatched
	r.Events, r.BacklogEvents = len(main), len(lagging)
	var twice int
	r.LostMain, twice = rc.missing(mainPath, main)
	r.ReceivedTwice += twice
	r.LostLagging, twice = rc.missing(laggingPath, lagging)
	r.ReceivedTwice += twice
	r.Level = level(r.Samples, r.TrafficFrom, r.TrafficTo, func(s Sample) int64 { return s.HistoryBytes })
	r.DatabaseLevel = level(r.Samples, r.TrafficFrom, r.TrafficTo, func(s Sample) int64 { return s.DatabaseBytes })
	r.Drops, r.Kept = drops(outcomes, r.Samples, started, prod.publishing)
	for _, o := range outcomes {
		if o.Outcome == retention.Busy {
			r.Busy++
		}
	}
	for _, e := range rec.errs {
		r.problem("%s", e)
	}
}

// preparePartitions makes the database's partitions Config.Interval long
// from now on. A new database has day sets from the migration, and the
// dispatchers remake only the sets not begun yet when the interval
// changes: without this, the run's history would stay in today's set.
// The sets are made ahead of the dispatchers' first pass, so that no event
// lands in the default partitions meanwhile.
func preparePartitions(ctx context.Context, pool *pgxpool.Pool, interval time.Duration) error {
	var dropped, created int
	if err := pool.QueryRow(ctx, dropOtherIntervals, interval).Scan(&dropped); err != nil {
		return fmt.Errorf("soak: drop the empty sets of another interval: %w", err)
	}
	if err := pool.QueryRow(ctx, createPartitions, interval, 3*interval).Scan(&created); err != nil {
		return fmt.Errorf("soak: create the partitions: %w", err)
	}
	if created == 0 {
		return fmt.Errorf("soak: no partition of %s could be made from now (%d sets of another interval dropped); the database is not new", interval, dropped)
	}
	return nil
}

// createEndpoints creates the tenant, the main endpoint and, with a
// backlog, the rate-limited lagging one, at base.
func createEndpoints(ctx context.Context, pool *pgxpool.Pool, key string, cfg Config, base string) error {
	box, err := secretbox.Parse(key)
	if err != nil {
		return err
	}
	st, err := store.New(pool, store.Config{Box: box})
	if err != nil {
		return err
	}
	if _, err := st.CreateTenant(ctx, store.NewTenant{ID: tenant}); err != nil {
		return fmt.Errorf("soak: create tenant: %w", err)
	}
	if _, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: base + mainPath, Description: "soak main", EventTypes: []string{mainType}}); err != nil {
		return fmt.Errorf("soak: create the main endpoint: %w", err)
	}
	if cfg.Backlog == 0 {
		return nil
	}
	if _, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: base + laggingPath, Description: "soak lagging",
		EventTypes: []string{laggingType}, RateLimit: cfg.BacklogRate}); err != nil {
		return fmt.Errorf("soak: create the lagging endpoint: %w", err)
	}
	return nil
}

// settle waits for every delivery to settle and every message to be
// dispatched, then for the maintenance passes to drop the sets that were
// kept for them: one period of the dispatchers' passes, or two samples
// when the run works passes itself. It returns the last sample.
func settle(ctx context.Context, pool *pgxpool.Pool, cfg Config, disp *dispatchers) (Sample, error) {
	deadline := time.Now().Add(cfg.Settle)
	for {
		if err := disp.exited(); err != nil {
			return Sample{}, fmt.Errorf("soak: %w", err)
		}
		s, err := sample(ctx, pool)
		if err != nil {
			return Sample{}, err
		}
		if s.Pending == 0 && s.Undispatched == 0 {
			break
		}
		if time.Now().After(deadline) {
			return s, nil
		}
		if !sleep(ctx, settledPoll) {
			return Sample{}, ctx.Err()
		}
	}
	passes := retention.Period(cfg.Interval) + 2*cfg.Sample
	if cfg.ClockAhead > 0 {
		passes = 2 * cfg.Sample
	}
	if !sleep(ctx, passes) {
		return Sample{}, ctx.Err()
	}
	return sample(ctx, pool)
}

// recorder samples the curve every Config.Sample and, with a
// Config.ClockAhead, works a retention pass after each sample.
type recorder struct {
	pool       *pgxpool.Pool
	cfg        Config
	prod       *producer
	started    time.Time
	maintainer *retention.Maintainer // nil without ClockAhead

	// Read once run has returned.
	samples  []Sample
	outcomes []PassOutcome
	errs     []string
}

func newRecorder(pool *pgxpool.Pool, cfg Config, prod *producer, started time.Time) (*recorder, error) {
	rec := &recorder{pool: pool, cfg: cfg, prod: prod, started: started}
	if cfg.ClockAhead > 0 {
		var err error
		rec.maintainer, err = retention.New(retention.Config{
			Pool: pool, Interval: cfg.Interval, Retention: cfg.Retention, RetryWindow: cfg.RetryWindow,
			Now:    func() time.Time { return time.Now().Add(cfg.ClockAhead) },
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return nil, fmt.Errorf("soak: %w", err)
		}
	}
	return rec, nil
}

func (rec *recorder) run(ctx context.Context) {
	ticker := time.NewTicker(rec.cfg.Sample)
	defer ticker.Stop()
	for {
		rec.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (rec *recorder) tick(ctx context.Context) {
	now := time.Now().Round(0)
	s, err := sample(ctx, rec.pool)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		rec.errs = append(rec.errs, err.Error())
		return
	}
	s.Elapsed = now.Sub(rec.started)
	s.Published = rec.prod.count()
	s.Phase = rec.prod.phase(now)
	rec.samples = append(rec.samples, s)
	if rec.maintainer == nil {
		return
	}
	rep, err := rec.maintainer.Pass(ctx)
	var pgErr *pgconn.PgError
	switch {
	case ctx.Err() != nil:
	case errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P07"):
		// A dispatcher's pass created the same partition at the same
		// time (unique_violation, duplicate_table); the next pass goes on.
	case err != nil:
		rec.errs = append(rec.errs, fmt.Sprintf("the run's retention pass: %v", err))
	default:
		rec.outcomes = append(rec.outcomes, reportOutcomes(rep, time.Now().Round(0))...)
	}
}
