// Command soak runs Herald with one-minute partitions and a retention of
// two minutes under steady traffic (package soak), prints the size curve
// and the checks, and with --out writes them to output.txt in a directory.
//
// By default it runs its own Postgres server, as cmd/chaos does (initdb
// into a temporary directory, pg_ctl start on a free loopback port, removed
// at the end), so that the database's size is the run's alone.
// --database-url creates the run's database on an existing server instead.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/cmd/internal/runreport"
	"github.com/heraldhq/herald/harness/chaos"
	"github.com/heraldhq/herald/harness/environment"
	"github.com/heraldhq/herald/harness/soak"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/scratchdb"
	"github.com/heraldhq/herald/migrations"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// errProblems reports a run whose checks failed; the output says which.
var errProblems = errors.New("the run's checks failed (see the problems above)")

func run(args []string, stdout, stderr io.Writer) error {
	fs := flagenv.New("soak")
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: soak [flags]\n\n"+
			"Publishes events at a steady rate through Herald's outbox to a receiver on loopback,\n"+
			"with dispatcher processes keeping one-minute partitions and a retention of two\n"+
			"minutes, samples the size of history, River's jobs and the database, and checks\n"+
			"that history levels off, that partitions are dropped while deliveries are in\n"+
			"flight and that nothing pending is lost. It runs its own Postgres server unless\n"+
			"--database-url names one.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	url := fs.String("database-url", "",
		"an existing Postgres server to create the soak_* database on (its database name is not used) instead of a private one; "+
			"not read from "+database.EnvURL+", so that a shell's setting never points the run at a shared server")
	pgBin := fs.String("pg-bin", defaultPGBin(), "directory of initdb and pg_ctl, for the private server")
	out := fs.String("out", "", "directory to write output.txt into; empty prints only")
	dispatcher := fs.String("dispatcher", "", "cmd/dispatcher binary to run; empty builds it from this checkout")
	logDir := fs.String("log-dir", "", "directory for the dispatchers' logs; empty means a temporary one, removed when the run passes")
	small := fs.Bool("small", false, "run the small configuration the test uses (about 30 s)")
	traffic := fs.Duration("traffic", 0, "how long the steady traffic lasts; 0 means the configuration's (6m, or 15s with --small)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; soak takes only flags (see --help)", fs.Arg(0))
	}
	cfg := soak.Full()
	if *small {
		cfg = soak.Small()
	}
	if *traffic != 0 {
		cfg.Traffic = *traffic
	}
	if err := cfg.Validate(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	serverURL, private := *url, (*chaos.PrivateServer)(nil)
	if serverURL == "" {
		logger.Info("soak: starting a private Postgres server", "bin", *pgBin)
		var err error
		if private, err = chaos.StartPrivateServer(ctx, chaos.PrivateServerConfig{BinDir: *pgBin}); err != nil {
			return err
		}
		defer func() {
			if err := private.Stop(); err != nil {
				fmt.Fprintln(stderr, "soak:", err)
			}
		}()
		serverURL = private.URL()
	}
	srv, err := scratchdb.Open(ctx, serverURL)
	if err != nil {
		return err
	}
	setup := soak.Setup{Logger: logger, LogDir: *logDir}
	if setup.LogDir == "" {
		if setup.LogDir, err = os.MkdirTemp("", "soak-logs-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(setup.LogDir, 0o755); err != nil {
		return fmt.Errorf("--log-dir: %w", err)
	}
	if setup.Dispatcher = *dispatcher; setup.Dispatcher == "" {
		logger.Info("soak: building cmd/dispatcher")
		if setup.Dispatcher, err = chaos.BuildDispatcher(ctx, setup.LogDir); err != nil {
			return err
		}
	}
	if private == nil {
		defer func() { _ = srv.DropAll(context.WithoutCancel(ctx)) }()
	}
	if setup.DatabaseURL, err = srv.Create(ctx, scratchdb.UniqueName("soak_herald_"), migrations.Apply); err != nil {
		return err
	}

	report, err := soak.Run(ctx, cfg, setup)
	if err != nil {
		return fmt.Errorf("%w (dispatcher logs in %s)", err, setup.LogDir)
	}
	var text bytes.Buffer
	writeHeader(&text, cfg, srv.Version(), private != nil)
	if err := report.WriteTable(&text); err != nil {
		return err
	}
	if err := runreport.Write(stdout, text.Bytes(), *out, "--out"); err != nil {
		return err
	}
	failed, err := runreport.Conclude(stderr, "soak", len(report.Problems), setup.LogDir, *logDir != "")
	if failed {
		return errProblems
	}
	return err
}

// defaultPGBin is --pg-bin's default: the one version's bin directory
// under /usr/lib/postgresql (Debian's layout), or empty.
func defaultPGBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) == 1 {
		return dirs[0]
	}
	return ""
}

func writeHeader(w io.Writer, cfg soak.Config, postgres string, private bool) {
	fmt.Fprintln(w, "soak: Herald with one-minute partitions and a short retention under steady traffic")
	for _, line := range environment.Lines(postgres) {
		fmt.Fprintln(w, line)
	}
	server := "an existing server (--database-url)"
	if private {
		server = "a private server of the run's own (initdb, pg_ctl start on a free loopback port; fsync off)"
	}
	fmt.Fprintf(w, "postgres: %s\n", server)
	fmt.Fprintf(w, "traffic: %d events/s for %s, %d bytes of padding each, to the main endpoint (500 to %.0f%% of requests, %.0f%% held past the %s timeout)\n",
		cfg.Rate, cfg.Traffic, cfg.PayloadBytes, 100*cfg.Fail, 100*cfg.Hold, cfg.SenderTimeout)
	fmt.Fprintf(w, "backlog: %d events first to a lagging endpoint limited to %g/s (%s to drain); steady traffic from the next partition boundary: %t\n",
		cfg.Backlog, cfg.BacklogRate, time.Duration(float64(cfg.Backlog)/cfg.BacklogRate*float64(time.Second)), cfg.AlignTraffic)
	fmt.Fprintf(w, "dispatchers: %d processes, --partition-interval %s --retention %s --retry-window %s --retry-base %s --retry-cap %s\n",
		cfg.Dispatchers, cfg.Interval, cfg.Retention, cfg.RetryWindow, cfg.RetryBase, cfg.RetryCap)
	if cfg.ClockAhead > 0 {
		fmt.Fprintf(w, "the run's own retention passes, every sample, with a clock %s ahead\n", cfg.ClockAhead)
	}
	fmt.Fprintln(w)
}
