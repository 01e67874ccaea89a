// Command chaos runs Herald end to end under faults (package chaos) and
// prints the result as a table; with --out it also writes it to
// output.txt in a directory.
//
// It creates two databases on the server named by --database-url (Herald's
// and the consumer's, chaos_… names, dropped again when it ends), builds
// cmd/dispatcher unless --dispatcher names a binary, and runs two
// dispatcher processes against them. By default the outage is a real
// restart of the local Postgres cluster with pg_ctlcluster, which every
// other client of that server goes through too; --postgres=connections
// breaks only the run's own connections instead.
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
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/harness/chaos"
	"github.com/heraldhq/herald/harness/environment"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/scratchdb"
	"github.com/heraldhq/herald/migrations"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// errProblems reports a run whose checks failed; the table says which.
var errProblems = errors.New("the run's checks failed (see the problems above)")

func run(args []string, stdout, stderr io.Writer) error {
	cfg := chaos.Full()
	fs := flagenv.New("chaos")
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: chaos [flags]\n\n"+
			"Publishes events through Herald's outbox to a consumer built on package receiver,\n"+
			"with two dispatcher processes, while the consumer fails, hangs and drops responses,\n"+
			"dispatchers are killed with SIGKILL and Postgres restarts; then checks that every\n"+
			"committed event was applied exactly once and prints the result.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	url := fs.String("database-url", database.DefaultURL,
		"Postgres server to create the chaos_* databases on; its database name is not used")
	fs.Env("database-url", database.EnvURL)
	out := fs.String("out", "", "directory to write output.txt into; empty prints only")
	postgres := fs.String("postgres", "restart", "the outage: restart (pg_ctlcluster restart of the local cluster, every client of the server included), connections (break only this run's connections, for a shared server) or none")
	dispatcher := fs.String("dispatcher", "", "cmd/dispatcher binary to run; empty builds it from this checkout")
	logDir := fs.String("log-dir", "", "directory for the dispatchers' logs; empty means a temporary one, removed when the run passes")
	keep := fs.Bool("keep-databases", false, "keep the run's databases instead of dropping them, to look into a failed run")
	small := fs.Bool("small", false, "run the small configuration the test uses")
	events := fs.Int("events", 0, "events to publish; 0 means the configuration's (20000, or 1000 with --small)")
	kills := fs.Int("kills", -1, "dispatcher kills; -1 means the configuration's (6, or 2 with --small)")
	seed := fs.Uint64("seed", cfg.Seed, "seed of the producers' and the consumer's draws")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; chaos takes only flags (see --help)", fs.Arg(0))
	}
	if *small {
		cfg = chaos.Small()
	}
	if *events != 0 {
		cfg.Events = *events
	}
	if *kills >= 0 {
		cfg.Kills = *kills
	}
	cfg.Seed = *seed
	if err := cfg.Validate(); err != nil {
		return err
	}
	if *postgres != "restart" && *postgres != "connections" && *postgres != "none" {
		return fmt.Errorf("--postgres %q: want restart, connections or none", *postgres)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	srv, err := scratchdb.Open(ctx, *url)
	if err != nil {
		return err
	}
	setup := chaos.Setup{Logger: logger, LogDir: *logDir}
	if setup.LogDir != "" {
		if err := os.MkdirAll(setup.LogDir, 0o755); err != nil {
			return fmt.Errorf("--log-dir: %w", err)
		}
	} else {
		if setup.LogDir, err = os.MkdirTemp("", "chaos-logs-"); err != nil {
			return err
		}
	}
	if setup.Dispatcher = *dispatcher; setup.Dispatcher == "" {
		logger.Info("chaos: building cmd/dispatcher")
		if setup.Dispatcher, err = chaos.BuildDispatcher(ctx, setup.LogDir); err != nil {
			return err
		}
	}
	defer func() {
		if *keep {
			fmt.Fprintf(stderr, "chaos: kept the databases %s\n", strings.Join(srv.Created(), ", "))
			return
		}
		_ = srv.DropAll(context.WithoutCancel(ctx))
	}()
	if setup.HeraldURL, err = newDatabase(ctx, srv, "herald", migrations.Apply); err != nil {
		return err
	}
	if setup.ConsumerURL, err = newDatabase(ctx, srv, "consumer", nil); err != nil {
		return err
	}
	if setup.Outage, err = chooseOutage(*postgres, srv); err != nil {
		return err
	}

	report, err := chaos.Run(ctx, cfg, setup)
	if err != nil {
		return fmt.Errorf("%w (dispatcher logs in %s)", err, setup.LogDir)
	}
	var text bytes.Buffer
	writeHeader(&text, cfg, srv.Version(), *postgres)
	if err := report.WriteTable(&text); err != nil {
		return err
	}
	if _, err := stdout.Write(text.Bytes()); err != nil {
		return err
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out %s: %w", *out, err)
		}
		if err := os.WriteFile(filepath.Join(*out, "output.txt"), text.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if len(report.Problems) > 0 {
		fmt.Fprintf(stderr, "chaos: dispatcher logs in %s\n", setup.LogDir)
		return errProblems
	}
	if *logDir == "" {
		return os.RemoveAll(setup.LogDir)
	}
	return nil
}

// chooseOutage turns --postgres (checked already) into the run's outage;
// none is nil.
func chooseOutage(mode string, srv *scratchdb.Server) (chaos.Outage, error) {
	switch mode {
	case "restart":
		return chaos.RestartCluster{AdminURL: srv.AdminURL()}, nil
	case "connections":
		return chaos.TerminateConnections{AdminURL: srv.AdminURL(), Databases: srv.Created(), Down: 2 * time.Second}, nil
	}
	return nil, nil
}

func writeHeader(w io.Writer, cfg chaos.Config, postgres, mode string) {
	fmt.Fprintln(w, "chaos: Herald end to end under faults")
	for _, line := range environment.Lines(postgres) {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "seed: %d\n", cfg.Seed)
	fmt.Fprintf(w, "producers: %d events about %d objects from %d goroutines, %.0f%% of them preceded by a publish that rolls back\n",
		cfg.Events, cfg.Objects, cfg.Producers, 100*cfg.Rollback)
	fmt.Fprintf(w, "consumer faults per request: 500 %.0f%%, held past the timeout %.0f%%, stored then connection dropped %.0f%%, stored then answered too late %.0f%%\n",
		100*cfg.Faults.Fail, 100*cfg.Faults.Hang, 100*cfg.Faults.Drop, 100*cfg.Faults.Late)
	fmt.Fprintf(w, "dispatchers: %d processes, --workers %d --timeout %s --rescue-stuck-after %s --retry-base %s --retry-cap %s; %d SIGKILLs, each down %s\n",
		cfg.Dispatchers, cfg.Workers, cfg.SenderTimeout, cfg.RescueAfter, cfg.RetryBase, cfg.RetryCap, cfg.Kills, cfg.Downtime)
	fmt.Fprintf(w, "postgres outage: --postgres=%s\n\n", mode)
}
