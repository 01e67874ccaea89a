package receiver_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/receiver"
	"github.com/heraldhq/herald/signing"
)

// A Handler stores verified webhooks in the inbox and answers at once.
func ExampleHandler() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	if err := receiver.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	secret, err := signing.ParseSecret(os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	handler, err := receiver.NewHandler(pool, "herald", receiver.VerifyConfig{Secrets: []signing.Secret{secret}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/herald", handler)
	server := &http.Server{
		Addr:              ":8080",
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // every phase bounded, so a sender
		ReadTimeout:       30 * time.Second, // trickling its request cannot hold
		WriteTimeout:      30 * time.Second, // a connection open
		IdleTimeout:       2 * time.Minute,
	}
	log.Fatal(server.ListenAndServe())
}

// A Worker applies each stored event in the transaction that marks it
// processed: the credit and the mark commit together or not at all.
func ExampleWorker() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	worker, err := receiver.NewWorker(pool, func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
		if ev.Type != "account.credited" {
			return nil // not ours: marked processed, never retried
		}
		var data struct {
			Amount int64 `json:"amount"`
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			return err // retried, then a dead letter
		}
		_, err := tx.Exec(ctx, `UPDATE accounts SET credits = credits + $2 WHERE id = $1`, ev.ObjectID, data.Amount)
		return err
	}, receiver.WorkerConfig{})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(worker.Run(ctx))
}

// ApplyIfNewer lets only a newer version of an object through, whatever
// order the events arrive in.
func ExampleApplyIfNewer() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	setPlan := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
		newer, err := receiver.ApplyIfNewer(ctx, tx, ev.Source, ev.ObjectID, ev.Version)
		if err != nil || !newer {
			return err // a stale or repeated version: done, nothing to apply
		}
		var data struct {
			Plan string `json:"plan"`
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE accounts SET plan = $2 WHERE id = $1`, ev.ObjectID, data.Plan)
		return err
	}
	worker, err := receiver.NewWorker(pool, setPlan, receiver.WorkerConfig{})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(worker.Run(ctx))
}

// Claim deduplicates a consumer that applies effects inside the request:
// the key and the effect commit in one transaction.
func ExampleClaim() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	secret, err := signing.ParseSecret(os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	cfg := receiver.VerifyConfig{Secrets: []signing.Secret{secret}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhooks/acme", func(w http.ResponseWriter, r *http.Request) {
		_, err := receiver.Verify(r, cfg)
		switch {
		case errors.Is(err, receiver.ErrBodyTooLarge):
			http.Error(w, "webhook too large", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "invalid webhook", http.StatusBadRequest)
			return
		}
		err = pgx.BeginFunc(r.Context(), pool, func(tx pgx.Tx) error {
			first, err := receiver.Claim(r.Context(), tx, "acme", r.Header.Get("webhook-id"))
			if err != nil || !first {
				return err // a copy already applied it
			}
			_, err = tx.Exec(r.Context(), `UPDATE accounts SET credits = credits + 100 WHERE id = 'acct_1'`)
			return err
		})
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	server := &http.Server{
		Addr:              ":8080",
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	log.Fatal(server.ListenAndServe())
}
