// Command bench measures Herald end to end on this machine: throughput,
// commit-to-arrival latency, isolation from hanging endpoints, and the
// queue's own limit, in one run. See docs/benchmarks.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/harness/bench"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == loadCommand {
		if err := runLoad(); err != nil {
			fmt.Fprintln(os.Stderr, "bench load:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// loadCommand is the argument that makes this program a load generator:
// the bench starts itself that way, in a process of its own, for the
// scenarios that publish through the API or plain SQL. It reads a
// bench.LoadSpec as JSON on stdin.
const loadCommand = "load-generator"

func runLoad() error {
	var spec bench.LoadSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		return fmt.Errorf("read the load spec from stdin: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return bench.RunLoad(ctx, spec, os.Stdout, os.Stdin)
}

// Where the dispatcher runs.
const (
	modeProcess   = "process"
	modeInProcess = "in-process"
)

func run(args []string) error {
	fs := flagenv.New("bench")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: bench [flags]

Runs Herald's benchmark scenarios against local Postgres and prints the
results as tables. Each scenario gets a fresh scratch database (dropped and
recreated; its name must contain "bench").

Scenarios:
`)
		for _, s := range bench.Scenarios {
			fmt.Fprintf(fs.Output(), "  %-16s %s\n", s.Name, s.About)
		}
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	var (
		scenarios  = fs.String("scenarios", "all", "comma-separated scenarios to run, or all")
		dbURL      = fs.String("database-url", bench.DefaultDatabaseURL, "scratch database, dropped and recreated for every scenario")
		producerDB = fs.String("producer-server-url", "", "the server split's producer database is made on, as deployed: a server of its own, e.g. a second local cluster, postgres://postgres@127.0.0.1:5433/postgres (the database part is only used to connect); empty means --database-url's server")
		mode       = fs.String("dispatcher", modeProcess, "where the dispatcher runs: process (a child process, measured through /proc) or in-process (measured with getrusage, which then includes producers and receivers)")
		binary     = fs.String("dispatcher-bin", "", "the dispatcher program for --dispatcher=process; defaults to the dispatcher next to this program (make build puts both in bin/)")
		dispArgs   = fs.String("dispatcher-args", "", "extra space-separated flags for the dispatcher program")
		apiBinary  = fs.String("api-bin", "", "the api program the http scenarios publish through; defaults to the api next to this program")
		apiArgs    = fs.String("api-args", "", "extra space-separated flags for the api program")
		jsonPath   = fs.String("json", "", "write the results as JSON to this file")
		svgPath    = fs.String("svg", "", "write the latency-over-time chart to this SVG file")
		smoke      = fs.Int("smoke", 0, "shrink every scenario to about this many deliveries (a quick check that everything works); 0 runs them full size")
		producers  = fs.Int("producers", bench.DefaultProducers, "producer goroutines publishing at once")
		maxDrain   = fs.Duration("max-drain", bench.DefaultMaxDrain, "longest wait for deliveries after publishing ends")
		every      = fs.Duration("progress", bench.DefaultProgressEvery, "interval between progress lines; 0 turns them off")
		workers    = fs.Int("workers", 0, "dispatcher workers (River MaxWorkers), also for the baseline; 0 means the dispatcher's default")
		maxConns   = fs.Int("max-conns", 0, "dispatcher connection pool size, also for the baseline; 0 means the dispatcher's default")
		history    = fs.Int("aged-history", bench.DefaultAgedHistory, "deliveries of history the aged scenario bulk-loads (with their messages and attempts) before it runs")
		cpuProfile = fs.String("cpuprofile", "", "write a CPU profile of the bench process (with --dispatcher=in-process, the dispatcher's too) to this file")
	)
	fs.Env("database-url", "HERALD_BENCH_DATABASE_URL")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; scenarios are chosen with --scenarios", fs.Arg(0))
	}
	selected, err := bench.Select(*scenarios)
	if err != nil {
		return err
	}
	if *history < 1 {
		return fmt.Errorf("--aged-history is %d; give at least 1 delivery (the default is %d)", *history, bench.DefaultAgedHistory)
	}
	for i := range selected {
		if selected[i].Aged {
			selected[i].History = *history
		}
	}
	if *smoke > 0 {
		for i := range selected {
			selected[i] = selected[i].Shrunk(*smoke)
		}
	}
	dbs, err := bench.NewScratchDatabases(*dbURL)
	if err != nil {
		return err
	}
	if *producerDB != "" {
		if err := dbs.SetProducerServer(*producerDB); err != nil {
			return fmt.Errorf("--producer-server-url: %w", err)
		}
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() { _ = dbs.Close(context.WithoutCancel(ctx)) }()

	cfg := bench.Config{
		NewDatabase:         dbs.New,
		NewFilledDatabase:   dbs.NewFilled,
		NewProducerDatabase: dbs.NewProducer,
		Dispatcher:          *mode,
		Baseline:            bench.BaselineConfig{Workers: *workers, MaxConns: int32(*maxConns)},
		Producers:           *producers,
		MaxDrain:            *maxDrain,
		APIArgs:             strings.Fields(*apiArgs),
	}
	if self, err := os.Executable(); err == nil {
		cfg.Load = bench.LoadProcess{Path: self, Args: []string{loadCommand}}
	}
	if *every > 0 {
		cfg.Progress, cfg.ProgressEvery = os.Stderr, *every
	}
	switch *mode {
	case modeProcess:
		path, err := siblingBinary("dispatcher", "--dispatcher-bin", *binary)
		if err != nil {
			return err
		}
		args := strings.Fields(*dispArgs)
		if *workers > 0 {
			args = append(args, fmt.Sprintf("--workers=%d", *workers))
		}
		if *maxConns > 0 {
			args = append(args, fmt.Sprintf("--max-conns=%d", *maxConns))
		}
		cfg.StartDispatcher = bench.ProcessDispatcher(path, args...)
	case modeInProcess:
		cfg.StartDispatcher = bench.InProcess(bench.InProcessOptions{Workers: *workers, MaxConns: *maxConns})
	default:
		return fmt.Errorf("--dispatcher is %q; use %s or %s", *mode, modeProcess, modeInProcess)
	}

	for _, s := range selected {
		if s.Load == bench.LoadHTTP {
			if cfg.APIPath, err = siblingBinary("api", "--api-bin", *apiBinary); err != nil {
				return err
			}
			break
		}
	}
	report, err := bench.Run(ctx, cfg, selected)
	report.ProducerServer = dbs.ProducerServerAddr()
	if len(report.Results) > 0 {
		report.WriteTables(os.Stdout)
		if werr := write(report, *jsonPath, *svgPath); err == nil {
			err = werr
		}
	}
	return err
}

// siblingBinary returns the program to run: the one named with flag, or
// the one called name next to this program.
func siblingBinary(name, flag, named string) (string, error) {
	if named != "" {
		return named, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the %s program: %w; name it with %s", name, err, flag)
	}
	path := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no %s program at %s; build it (make build) and pass %s bin/%s", name, path, flag, name)
	}
	return path, nil
}

func write(report bench.Report, jsonPath, svgPath string) error {
	if jsonPath != "" {
		if err := report.WriteJSON(jsonPath); err != nil {
			return err
		}
	}
	if svgPath != "" {
		f, err := os.Create(svgPath)
		if err != nil {
			return fmt.Errorf("write chart: %w", err)
		}
		if err := report.WriteSVG(f); err != nil {
			f.Close()
			return fmt.Errorf("write chart: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write chart: %w", err)
		}
	}
	return nil
}
