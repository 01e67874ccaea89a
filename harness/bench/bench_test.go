package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/harness/bench"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations/producer"
	"github.com/heraldhq/herald/schedule"
)

// smokeDeliveries is the size every scenario shrinks to in the smoke test:
// enough to exercise each path, small enough to take a second or two.
const smokeDeliveries = 200

// fast retries failed first attempts within milliseconds.
var fast = schedule.Policy{Base: 20 * time.Millisecond, Cap: 100 * time.Millisecond, Window: time.Hour}

type testBundle struct {
	cfg bench.Config
	// producerURLs are the producer databases the run made.
	producerURLs []string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{}
	b.cfg = bench.Config{
		NewDatabase: func(context.Context) (string, func() error, error) {
			return pgtest.NewDatabase(t, pgtest.Herald), func() error { return nil }, nil
		},
		NewProducerDatabase: func(ctx context.Context) (string, func() error, error) {
			url := pgtest.NewDatabase(t, pgtest.Empty)
			b.producerURLs = append(b.producerURLs, url)
			pool, err := database.Open(ctx, url, database.Options{MaxConns: 1})
			if err != nil {
				return "", nil, err
			}
			defer pool.Close()
			return url, func() error { return nil }, producer.Apply(ctx, pool)
		},
		NewFilledDatabase: func(ctx context.Context, _ string, fill func(context.Context, *pgxpool.Pool) error) (func(context.Context) (string, func() error, error), error) {
			url := pgtest.NewDatabase(t, pgtest.Herald)
			pool, err := database.Open(ctx, url, database.Options{MaxConns: 4})
			if err != nil {
				return nil, err
			}
			defer pool.Close()
			if err := fill(ctx, pool); err != nil {
				return nil, err
			}
			return func(context.Context) (string, func() error, error) { return url, func() error { return nil }, nil }, nil
		},
		StartDispatcher: bench.InProcess(bench.InProcessOptions{
			MaxConns: 6,
			Policy:   fast,
			Logger:   slog.New(slog.DiscardHandler),
		}),
		Dispatcher: "in-process",
		// Few connections: test binaries share the server's 100.
		Producers: 4,
		MaxDrain:  time.Minute,
	}
	return b
}

// TestMain removes the programs loadPrograms built.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// loadPrograms builds, once per test run, the programs the scenarios
// with a Load start: the bench command, which is the load generator, and
// the api.
func loadPrograms(t *testing.T) (bench.LoadProcess, string) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "herald-bench-programs-")
		if buildErr != nil {
			return
		}
		out, err := osexec.Command("go", "build", "-o", buildDir+"/",
			"github.com/heraldhq/herald/cmd/bench", "github.com/heraldhq/herald/cmd/api").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build the bench and the api: %v: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return bench.LoadProcess{Path: filepath.Join(buildDir, "bench"), Args: []string{"load-generator"}}, filepath.Join(buildDir, "api")
}

// TestScenariosSmoke runs every scenario, shrunk, so that the bench keeps
// working. It asserts what must hold at any speed, never a timing. The
// scenarios run one after the other: each opens a dozen connections, and
// test binaries share the server's.
func TestScenariosSmoke(t *testing.T) {
	t.Parallel()
	for _, scenario := range bench.Scenarios {
		t.Run(scenario.Name, func(t *testing.T) {
			b := setup(t)
			if scenario.Load != "" {
				b.cfg.Load, b.cfg.APIPath = loadPrograms(t)
			}
			report, err := bench.Run(context.Background(), b.cfg, []bench.Scenario{scenario.Shrunk(smokeDeliveries)})
			require.NoError(t, err)

			wantRuns := 1
			if scenario.Hanging > 0 || scenario.Noisy != nil {
				wantRuns = 2 // the control run, then the run with hanging endpoints
			}
			if scenario.Aged {
				wantRuns = 4 // burst and steady, fresh and aged
				require.Len(t, report.Aged, 2)
				for _, a := range report.Aged {
					require.Empty(t, a.Problem, "%s database", a.Age)
					require.Positive(t, a.Rows, "%s database: the fill loaded its rows", a.Age)
					require.Positive(t, a.FirstPerSecond, "%s database", a.Age)
					require.Positive(t, a.ReplayPerSecond, "%s database: the replay arrived", a.Age)
					require.Len(t, a.Pages, 5, "%s database: every page answered", a.Age)
				}
			}
			require.Len(t, report.Results, wantRuns)
			for _, res := range report.Results {
				require.Empty(t, res.Problem, "run %s", res.Scenario)
				require.Positive(t, res.Deliveries, "run %s", res.Scenario)
				require.Equal(t, res.Deliveries, res.Delivered, "run %s: every measured delivery arrives", res.Scenario)
				require.Positive(t, res.DeliveredPerSecond, "run %s", res.Scenario)
				require.Positive(t, res.Writes.Rows(), "run %s: Postgres counted the run's writes", res.Scenario)
				require.Positive(t, res.DispatcherCPUSeconds, "run %s", res.Scenario)
				require.NotEmpty(t, res.Series, "run %s", res.Scenario)
				if !scenario.Baseline {
					require.Positive(t, res.Latency.Count, "run %s", res.Scenario)
					require.LessOrEqual(t, res.Latency.Count, res.Deliveries, "run %s: deliveries of events committed in the warm-up are not measured", res.Scenario)
					require.Positive(t, res.Latency.P50, "run %s", res.Scenario)
					require.LessOrEqual(t, res.Latency.P50, res.Latency.P99, "run %s", res.Scenario)
					require.LessOrEqual(t, res.Latency.P99, res.Latency.Max, "run %s", res.Scenario)
				}
				if !scenario.Baseline && scenario.Load == "" {
					require.Positive(t, res.CommitLatency.Count, "run %s: the producers' transactions are timed", res.Scenario)
					require.LessOrEqual(t, res.CommitLatency.P50, res.CommitLatency.P99, "run %s", res.Scenario)
				}
			}
			last := report.Results[len(report.Results)-1]
			if scenario.FailFirst > 0 {
				require.Greater(t, last.AttemptsPerDelivery, 1.0, "failed first attempts are retried")
			} else {
				require.InDelta(t, 1.0, last.AttemptsPerDelivery, 0.001)
			}
			if scenario.Hanging > 0 {
				require.Equal(t, 2, last.Hanging)
			}
			if scenario.Noisy != nil {
				require.Equal(t, scenario.Shrunk(smokeDeliveries).Noisy.Endpoints, last.Hanging, "the noisy tenant's endpoints hang")
				require.Len(t, report.Targets, 1, "the noisy target is judged")
			}

			if scenario.Split {
				require.Len(t, b.producerURLs, 1)
				pool, err := database.Open(context.Background(), b.producerURLs[0], database.Options{MaxConns: 1})
				require.NoError(t, err)
				defer pool.Close()
				var relayed bool
				err = pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM herald.outbox WHERE relayed_at IS NOT NULL)`).Scan(&relayed)
				require.NoError(t, err)
				require.True(t, relayed, "the events were published into the producer database and relayed from it")
			}

			var tables bytes.Buffer
			report.WriteTables(&tables)
			for _, res := range report.Results {
				require.Contains(t, tables.String(), "| "+res.Scenario+" ")
			}
			var svg bytes.Buffer
			require.NoError(t, report.WriteSVG(&svg))
			require.True(t, strings.HasPrefix(svg.String(), "<svg"))
			path := filepath.Join(t.TempDir(), "results.json")
			require.NoError(t, report.WriteJSON(path))
		})
	}
}

func TestRunNeedsADispatcher(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.StartDispatcher = nil
	steady, err := bench.Select("steady")
	require.NoError(t, err)
	_, err = bench.Run(context.Background(), b.cfg, steady)
	require.ErrorContains(t, err, "scenario steady needs Config.StartDispatcher")
}

func TestSelect(t *testing.T) {
	t.Parallel()
	all, err := bench.Select("all")
	require.NoError(t, err)
	require.Equal(t, bench.Scenarios, all)

	two, err := bench.Select("steady, burst")
	require.NoError(t, err)
	require.Equal(t, "steady", two[0].Name)
	require.Equal(t, "burst", two[1].Name)

	_, err = bench.Select("steady,bursty")
	require.ErrorContains(t, err, `unknown scenario "bursty"; choose from baseline, burst, ordered, steady, ordered-steady, split, fanout, filtered, isolation, noisy-tenant, noisy-tenant-shared, failing, sql-publish, http-burst, http-batch, http-steady-50, http-steady-1000, aged, or all`)
}

func TestScratchDatabasesRefuseARealDatabase(t *testing.T) {
	t.Parallel()
	_, err := bench.NewScratchDatabases("postgres://postgres@127.0.0.1:5432/herald?sslmode=disable")
	require.ErrorContains(t, err, `drops and recreates database "herald"`)
}

func TestReportJSON(t *testing.T) {
	t.Parallel()
	report := bench.Report{Results: []bench.Result{{Scenario: "steady", Latency: bench.Latency{Count: 1, P99: 12.5}}}}
	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, report.WriteJSON(path))
	var back bench.Report
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, 12.5, back.Results[0].Latency.P99)
}
