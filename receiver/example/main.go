// Command example is a complete consumer of Herald's webhooks built on
// package receiver. It keeps accounts in its own Postgres table and
// understands two event types, both about the account named by object.id:
//
//   - account.credited, data {"amount": 100}: adds the amount. Every event
//     counts exactly once, in whatever order the events arrive.
//   - account.plan_changed, data {"plan": "pro"}: sets the plan. Only a
//     higher object.version than the last one applied takes effect, so a
//     late, older update never overwrites a newer plan.
//
// Other types are acknowledged and ignored. Webhooks are received on
// POST /webhooks, stored in the inbox and answered at once; a worker in the
// same process applies them.
//
// Usage:
//
//	go run ./receiver/example --secret whsec_… [--database-url URL] [--listen ADDR] [--source NAME]
//
// Every flag has an environment fallback: --secret WEBHOOK_SECRET (several
// secrets, comma-separated, during a rotation), --database-url
// DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// --listen LISTEN_ADDR (default 127.0.0.1:8081), --source WEBHOOK_SOURCE
// (default herald).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/receiver"
	"github.com/heraldhq/herald/signing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

type options struct {
	databaseURL string
	secrets     []signing.Secret
	listen      string
	source      string
}

func parseFlags(args []string, output io.Writer) (options, error) {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(output)
	databaseURL := fs.String("database-url", envOr("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"Postgres URL of the consumer's database (env DATABASE_URL)")
	secrets := fs.String("secret", os.Getenv("WEBHOOK_SECRET"),
		"the endpoint's signing secret, whsec_…; during a rotation the old and the new, comma-separated (env WEBHOOK_SECRET, required)")
	listen := fs.String("listen", envOr("LISTEN_ADDR", "127.0.0.1:8081"), "address to listen on (env LISTEN_ADDR)")
	source := fs.String("source", envOr("WEBHOOK_SOURCE", "herald"), "name of the sender, the namespace of its webhook IDs (env WEBHOOK_SOURCE)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	opts := options{databaseURL: *databaseURL, listen: *listen, source: *source}
	if strings.TrimSpace(*secrets) == "" {
		return options{}, errors.New("--secret (or WEBHOOK_SECRET) is required: the whsec_ secret shown when the endpoint was created")
	}
	for i, s := range strings.Split(*secrets, ",") {
		secret, err := signing.ParseSecret(s)
		if err != nil {
			return options{}, fmt.Errorf("--secret, entry %d: %w", i+1, err)
		}
		opts.secrets = append(opts.secrets, secret)
	}
	return opts, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func run(ctx context.Context, args []string, output io.Writer) error {
	opts, err := parseFlags(args, output)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(output, nil))
	pool, err := pgxpool.New(ctx, opts.databaseURL)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return err
	}
	routes, worker, err := newConsumer(pool, opts.source, opts.secrets, receiver.WorkerConfig{Logger: logger})
	if err != nil {
		return err
	}

	listener, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return err
	}
	// Every phase of a request is bounded: without ReadTimeout a sender
	// trickling its body would hold a connection and a goroutine as long
	// as it likes. Herald gives up on an attempt after 15 s, and closes an
	// idle connection after 90 s, before the server does.
	server := &http.Server{
		Handler:           routes,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 2)
	go func() { errc <- worker.Run(ctx) }()
	go func() { errc <- server.Serve(listener) }()
	logger.Info("receiving webhooks", "url", "http://"+listener.Addr().String()+"/webhooks", "source", opts.source)

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return errors.Join(err, server.Shutdown(shutdownCtx))
}

// migrate creates the receiver's inbox and the consumer's own table.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if err := receiver.Migrate(ctx, pool); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS accounts (
    id      text PRIMARY KEY,
    credits bigint NOT NULL DEFAULT 0,
    plan    text
)`)
	if err != nil {
		return fmt.Errorf("create accounts table: %w", err)
	}
	return nil
}

// newConsumer wires the inbox: POST /webhooks stores verified events and a
// worker applies them with apply.
func newConsumer(pool *pgxpool.Pool, source string, secrets []signing.Secret, cfg receiver.WorkerConfig) (http.Handler, *receiver.Worker, error) {
	handler, err := receiver.NewHandler(pool, source, receiver.VerifyConfig{Secrets: secrets, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, err
	}
	worker, err := receiver.NewWorker(pool, apply, cfg)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks", handler)
	return mux, worker, nil
}

// apply is the consumer's business logic, run by the worker inside the
// transaction that marks ev processed.
func apply(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
	switch ev.Type {
	case "account.credited":
		return credit(ctx, tx, ev)
	case "account.plan_changed":
		return setPlan(ctx, tx, ev)
	}
	return nil
}

func credit(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
	var data struct {
		Amount int64 `json:"amount"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return fmt.Errorf("account.credited data: %w", err)
	}
	if ev.ObjectID == "" || data.Amount <= 0 {
		return fmt.Errorf("account.credited needs object.id and a positive amount, got %q and %d", ev.ObjectID, data.Amount)
	}
	_, err := tx.Exec(ctx, `INSERT INTO accounts (id, credits) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + excluded.credits`, ev.ObjectID, data.Amount)
	return err
}

func setPlan(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
	newer, err := receiver.ApplyIfNewer(ctx, tx, ev.Source, ev.ObjectID, ev.Version)
	if err != nil || !newer {
		return err // nil when stale: the event is done, the newer plan stays
	}
	var data struct {
		Plan string `json:"plan"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return fmt.Errorf("account.plan_changed data: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO accounts (id, plan) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET plan = excluded.plan`, ev.ObjectID, data.Plan)
	return err
}
