// Command api serves Herald's management API and customer portal.
//
// This first version prepares the database (creates it when missing and
// applies migrations) and exits; the HTTP API arrives with its routes.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/heraldhq/herald/internal/config"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: api [flags]\n\nPrepares Herald's database (creates it if missing, applies migrations) and exits.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var db config.Database
	db.Register(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pool, err := db.Open(ctx, logger)
	if err != nil {
		return err
	}
	pool.Close()
	return nil
}
