// Command chaos runs Herald end to end under faults (package chaos) and
// prints the result as a table; with --out it also writes it to
// output.txt in a directory.
//
// By default it runs its own Postgres server: initdb into a temporary
// directory, pg_ctl start on a free loopback port (as the postgres user
// when it runs as root), and pg_ctl stop and removal at the end. The outage
// is then a real restart of that server (pg_ctl restart), which disturbs
// no one else, so the run may go on beside other tests. --database-url
// points it at an existing server instead; there the outage can only
// break the run's own connections (--postgres=connections).
//
// It creates two databases on the server (Herald's and the consumer's,
// chaos_… names), builds cmd/dispatcher unless --dispatcher names a
// binary, and runs two dispatcher processes against them. It also runs
// itself as the consumer's worker process (chaos.RunConsumerWorker, when
// chaos.ConsumerWorkerEnv is set).
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
	"github.com/heraldhq/herald/cmd/internal/runreport"
	"github.com/heraldhq/herald/harness/chaos"
	"github.com/heraldhq/herald/harness/environment"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/scratchdb"
	"github.com/heraldhq/herald/migrations"
)

func main() {
	if spec, ok := os.LookupEnv(chaos.ConsumerWorkerEnv); ok {
		if err := chaos.RunConsumerWorker(spec); err != nil {
			fmt.Fprintln(os.Stderr, "chaos consumer worker:", err)
			os.Exit(1)
		}
		return
	}
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
			"dispatchers are killed with SIGKILL and Postgres restarts, an endpoint answers 410\n"+
			"and is replayed, deliveries are resent and jobs ended by force, a dispatcher's\n"+
			"database connections go silent and a poison event crashes the consumer's worker;\n"+
			"then checks that every committed event was applied exactly once and prints the\n"+
			"result. It runs its own Postgres server unless --database-url names one.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	url := fs.String("database-url", "",
		"an existing Postgres server to create the chaos_* databases on (its database name is not used) instead of a private one; "+
			"not read from "+database.EnvURL+", so that a shell's setting never points the run at a shared server")
	pgBin := fs.String("pg-bin", defaultPGBin(), "directory of initdb and pg_ctl, for the private server")
	out := fs.String("out", "", "directory to write output.txt into; empty prints only")
	postgres := fs.String("postgres", "", "the outage: restart (pg_ctl restart of the private server; not with --database-url), connections (break only this run's connections, for a shared server) or none; empty means restart, or connections with --database-url")
	dispatcher := fs.String("dispatcher", "", "cmd/dispatcher binary to run; empty builds it from this checkout")
	logDir := fs.String("log-dir", "", "directory for the dispatchers' logs; empty means a temporary one, removed when the run passes")
	keep := fs.Bool("keep-databases", false, "keep the run's databases instead of dropping them, to look into a failed run; a private server is left running")
	small := fs.Bool("small", false, "run the small configuration the test uses")
	events := fs.Int("events", 0, "events to publish; 0 means the configuration's (20000, or 1000 with --small)")
	kills := fs.Int("kills", -1, "dispatcher kills; -1 means the configuration's (6, or 2 with --small)")
	seed := fs.Uint64("seed", cfg.Seed, "seed of the producers' and the consumer's draws")
	split := fs.Bool("split", false, "split mode: the producers publish into a database of their own that holds only the outbox, and every dispatcher relays it into Herald's (--source-database-url); the same invariants, and that database holds nothing else")
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
	if *postgres == "" {
		*postgres = "restart"
		if *url != "" {
			*postgres = "connections"
		}
	}
	if *postgres != "restart" && *postgres != "connections" && *postgres != "none" {
		return fmt.Errorf("--postgres %q: want restart, connections or none", *postgres)
	}
	if *postgres == "restart" && *url != "" {
		return errors.New("--postgres=restart restarts the run's private server; with --database-url (a server others may use) choose --postgres=connections or none")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program, to run it as the consumer's worker process: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	serverURL := *url
	var private *chaos.PrivateServer
	if serverURL == "" {
		logger.Info("chaos: starting a private Postgres server", "bin", *pgBin)
		if private, err = chaos.StartPrivateServer(ctx, chaos.PrivateServerConfig{BinDir: *pgBin}); err != nil {
			return err
		}
		defer func() {
			if *keep {
				fmt.Fprintf(stderr, "chaos: kept the private Postgres server at %s; stop it with: %s\n", private.URL(), private.StopCommand())
				return
			}
			if err := private.Stop(); err != nil {
				fmt.Fprintln(stderr, "chaos:", err)
			}
		}()
		serverURL = private.URL()
		logger.Info("chaos: private Postgres server up", "addr", private.Addr())
	}
	srv, err := scratchdb.Open(ctx, serverURL)
	if err != nil {
		return err
	}
	setup := chaos.Setup{Logger: logger, LogDir: *logDir, Self: self}
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
		switch {
		case private != nil:
			// Stopped and removed with its databases.
		case *keep:
			fmt.Fprintf(stderr, "chaos: kept the databases %s\n", strings.Join(srv.Created(), ", "))
		default:
			_ = srv.DropAll(context.WithoutCancel(ctx))
		}
	}()
	if setup.HeraldURL, err = newDatabase(ctx, srv, "herald", migrations.Apply); err != nil {
		return err
	}
	if setup.ConsumerURL, err = newDatabase(ctx, srv, "consumer", nil); err != nil {
		return err
	}
	if *split {
		// Empty: the run installs the producer's outbox there.
		if setup.ProducerURL, err = newDatabase(ctx, srv, "producer", nil); err != nil {
			return err
		}
	}
	setup.Outage = chooseOutage(*postgres, srv, private)

	report, err := chaos.Run(ctx, cfg, setup)
	if err != nil {
		return fmt.Errorf("%w (dispatcher logs in %s)", err, setup.LogDir)
	}
	var text bytes.Buffer
	writeHeader(&text, cfg, srv.Version(), *postgres, private != nil, *split)
	if err := report.WriteTable(&text); err != nil {
		return err
	}
	if err := runreport.Write(stdout, text.Bytes(), *out, "--out"); err != nil {
		return err
	}
	failed, err := runreport.Conclude(stderr, "chaos", len(report.Problems), setup.LogDir, *logDir != "")
	if failed {
		return errProblems
	}
	return err
}

// chooseOutage turns --postgres (checked already) into the run's outage;
// none is nil. restart needs the private server.
func chooseOutage(mode string, srv *scratchdb.Server, private *chaos.PrivateServer) chaos.Outage {
	switch mode {
	case "restart":
		return chaos.RestartServer{Server: private}
	case "connections":
		return chaos.TerminateConnections{AdminURL: srv.AdminURL(), Databases: srv.Created(), Down: 2 * time.Second}
	}
	return nil
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

func writeHeader(w io.Writer, cfg chaos.Config, postgres, mode string, private, split bool) {
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
	server := "an existing server (--database-url)"
	if private {
		server = "a private server of the run's own (initdb, pg_ctl start on a free loopback port; fsync off)"
	}
	fmt.Fprintf(w, "postgres: %s; outage: --postgres=%s\n", server, mode)
	if split {
		fmt.Fprintln(w, "split mode (--split): the producers publish into a database of their own holding only the outbox; the dispatchers relay it into Herald's")
	}
	fmt.Fprintf(w, "also: %.0f%% of the events to a third endpoint with ordering object, under the same faults; %.0f%% of the events to a second endpoint answering 410 Gone until %.0f%% of the run, then enabled and replayed (only_failed); %d pending deliveries resent; %d delivery jobs ended by force (reconciler every %s); dispatcher 0's database black-holed for %s; event %d kills the consumer's worker process (lease %s, %d attempts)\n\n",
		100*cfg.OrderedShare, 100*cfg.GoneShare, 100*cfg.GoneUntil, cfg.Resends, cfg.ForcedEnds, cfg.ReconcileInterval, cfg.BlackHole, cfg.Poison, cfg.ConsumerLease, cfg.ConsumerMaxAttempts)
}
