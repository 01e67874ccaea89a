package bench

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/migrations"
)

// BaselineConfig configures the River client of the baseline scenario. Set
// it like the dispatcher's, so the baseline is the same queue doing nothing
// but queueing.
type BaselineConfig struct {
	// Workers is the queue's MaxWorkers. Defaults to the dispatcher's
	// default. Zero means the default.
	Workers int
	// FetchCooldown and FetchPollInterval are River's settings. Default to
	// the dispatcher's. Zero means the default.
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
	// MaxConns caps the client's connection pool. Defaults to the
	// dispatcher's. Zero means the default.
	MaxConns int32
}

// baselineQueue is the queue the no-op jobs run on.
const baselineQueue = "bench_baseline"

// baselineInsertBatch is how many jobs one insert carries.
const baselineInsertBatch = 5000

// noopArgs is a job that does nothing.
type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "bench.noop" }

func (noopArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: baselineQueue} }

// baseline inserts s.Events no-op River jobs, then starts a River client
// and times how fast it works them: the rate a delivery pipeline on this
// queue and this database cannot exceed.
func (r *runner) baseline(ctx context.Context, s Scenario) (res Result, err error) {
	st, err := r.newStage(ctx)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if dropErr := st.close(ctx); err == nil && dropErr != nil {
			err = fmt.Errorf("drop bench database: %w", dropErr)
		}
	}()
	before, err := readWrites(ctx, st.stats)
	if err != nil {
		return Result{}, err
	}
	cpuBefore, _ := readMachineCPU()
	res = Result{Scenario: s.Name, About: s.About, Events: s.Events, Deliveries: s.Events, LoadAverage: loadAverage()}

	cfg := r.cfg.Baseline
	pool, err := database.Open(ctx, st.url, database.Options{MaxConns: cmp.Or(cfg.MaxConns, dispatcher.DefaultMaxConns)})
	if err != nil {
		return Result{}, err
	}
	defer pool.Close()

	rec := newRecorder(time.Now())
	var (
		mu     sync.Mutex
		worked []time.Duration
	)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[noopArgs]) error {
		at := rec.since(time.Now())
		mu.Lock()
		worked = append(worked, at)
		mu.Unlock()
		rec.delivered.Add(1)
		return nil
	}))
	cooldown := cmp.Or(cfg.FetchCooldown, dispatcher.FetchCooldown)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            migrations.Schema,
		Queues:            map[string]river.QueueConfig{baselineQueue: {MaxWorkers: cmp.Or(cfg.Workers, dispatcher.DefaultWorkers)}},
		Workers:           workers,
		FetchCooldown:     cooldown,
		FetchPollInterval: max(cmp.Or(cfg.FetchPollInterval, dispatcher.JobPollInterval), cooldown),
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return Result{}, fmt.Errorf("baseline River client: %w", err)
	}

	insertStart := time.Now()
	params := make([]river.InsertManyParams, 0, baselineInsertBatch)
	for i := 0; i < s.Events; i += baselineInsertBatch {
		params = params[:0]
		for n := i; n < min(i+baselineInsertBatch, s.Events); n++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{N: n}})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return Result{}, fmt.Errorf("insert baseline jobs: %w", err)
		}
		rec.published.Add(int64(len(params)))
	}
	res.PublishSeconds = time.Since(insertStart).Seconds()
	res.PublishPerSecond = float64(s.Events) / res.PublishSeconds

	progress := r.startProgress(s.Name, rec, s.Events)
	defer progress.stop()
	if err := resetPeakRSS(); err != nil {
		return Result{}, fmt.Errorf("reset peak RSS: %w", err)
	}
	usageBefore, err := selfUsage()
	if err != nil {
		return Result{}, err
	}
	w := window{start: rec.since(time.Now()), warmup: s.Warmup, expected: s.Events}
	if err := client.Start(ctx); err != nil {
		return Result{}, fmt.Errorf("start baseline River client: %w", err)
	}
	res.Problem = r.waitDelivered(ctx, rec, s.Events)
	pgCPU, err := backendCPU(ctx, st.stats)
	if err != nil {
		return Result{}, err
	}
	res.PostgresCPUSeconds = pgCPU.Seconds()
	if err := client.Stop(ctx); err != nil {
		return Result{}, fmt.Errorf("stop baseline River client: %w", err)
	}
	progress.stop()
	usageAfter, err := selfUsage()
	if err != nil {
		return Result{}, err
	}
	pool.Close()

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

	mu.Lock()
	slices.Sort(worked)
	mu.Unlock()
	res.Delivered = len(worked)
	res.AttemptsPerDelivery = 1
	if len(worked) > 0 {
		res.DeliveredPerSecond = sustainedRate(worked, w)
		res.DrainSeconds = (worked[len(worked)-1] - w.start).Seconds()
	}
	res.Series = throughputSeries(worked, w.start)
	res.DispatcherCPUSeconds = (usageAfter.CPU - usageBefore.CPU).Seconds()
	res.DispatcherPeakRSSMB = float64(usageAfter.PeakRSS) / (1 << 20)
	res.CPUPerDeliveryMS = (res.DispatcherCPUSeconds + res.PostgresCPUSeconds) * 1000 / float64(s.Events)
	res.Writes = writes
	res.RowsPerDelivery = float64(writes.Rows()) / float64(s.Events)
	res.WALBytesPerDelivery = float64(writes.WALBytes) / float64(s.Events)
	res.StoredBytesPerDelivery = float64(writes.StoredBytes) / float64(s.Events)
	return res, nil
}

// throughputSeries counts what happened in each second since start.
func throughputSeries(sorted []time.Duration, start time.Duration) []Point {
	if len(sorted) == 0 {
		return nil
	}
	last := int(max(sorted[len(sorted)-1]-start, 0) / time.Second)
	series := make([]Point, last+1)
	for i := range series {
		series[i].Second = i
	}
	for _, at := range sorted {
		series[int(max(at-start, 0)/time.Second)].Delivered++
	}
	return series
}
