// Command sim runs the receiver experiments of package sim at full size
// against real Postgres and prints the tables; with --out it also writes
// them, and the jitter histogram as SVG, into a directory.
//
// It creates one database per handler design and crash design on the
// server named by --database-url (sim_… databases, dropped again when it
// ends) and serves every design over HTTP on loopback.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/harness/environment"
	"github.com/heraldhq/herald/harness/sim"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/scratchdb"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sim:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	cfg := sim.Article()
	fs := flagenv.New("sim")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sim [flags]\n\n"+
			"Runs the handler, crash, retention and jitter experiments with the reference\n"+
			"article's parameters against real Postgres and prints the tables.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	url := fs.String("database-url", database.DefaultURL,
		"Postgres server to create the sim_* databases on; its database name is not used")
	fs.Env("database-url", database.EnvURL)
	out := fs.String("out", "", "directory to write output.txt and jitter.svg into; empty prints only")
	prefix := fs.String("db-prefix", "sim_", "name prefix of the databases sim creates and drops; letters, digits and underscores")
	small := fs.Bool("small", false, "run the small configuration the tests use (seconds, not minutes)")
	seed := fs.Uint("seed", uint(cfg.Seed), "seed of every draw")
	events := fs.Int("events", 0, "events in the handler experiment; 0 means the configuration's (10000, or 300 with --small)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *small {
		cfg = sim.Small()
	}
	if *events != 0 {
		cfg.Events = *events
	}
	if !validPrefix(*prefix) {
		return fmt.Errorf("--db-prefix %q: use letters, digits and underscores, starting with a letter", *prefix)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; sim takes only flags (see --help)", fs.Arg(0))
	}
	if *seed > 1<<32-1 {
		return fmt.Errorf("--seed %d does not fit in 32 bits; use a number below %d", *seed, uint64(1)<<32)
	}
	cfg.Seed = uint32(*seed)
	if err := cfg.Validate(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := scratchdb.Open(ctx, *url)
	if err != nil {
		return err
	}

	report, runErr := sim.Run(ctx, cfg, newDatabase(srv, *prefix))
	if err := srv.DropAll(context.WithoutCancel(ctx)); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	report.Environment = environment.Lines(srv.Version())

	var text bytes.Buffer
	if err := report.WriteText(&text); err != nil {
		return err
	}
	if _, err := stdout.Write(text.Bytes()); err != nil {
		return err
	}
	if *out == "" {
		return nil
	}
	return writeFiles(*out, text.Bytes(), report)
}

func validPrefix(p string) bool {
	if p == "" || len(p) > 30 {
		return false
	}
	for i, r := range p {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || r != '_' && (r < '0' || r > '9')) {
			return false
		}
	}
	return true
}

func writeFiles(dir string, text []byte, report sim.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "output.txt"), text, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	var svg bytes.Buffer
	if err := sim.WriteJitterSVG(&svg, report.Jitter); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "jitter.svg"), svg.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}
