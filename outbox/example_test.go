package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/outbox"
)

// Publish an event in the same transaction as the business change it
// describes: both commit, or neither does.
func Example() {
	ctx := context.Background()
	// A scratch Herald database; a producer uses its own pool.
	pool, cleanup, err := pgtest.NewPoolForExample(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	// Tenants are normally created through Herald's API.
	if _, err := pool.Exec(ctx, `INSERT INTO herald.tenants (id) VALUES ('acme');
		CREATE TABLE invoices (id text PRIMARY KEY, paid boolean NOT NULL DEFAULT false);
		INSERT INTO invoices (id) VALUES ('inv_123')`); err != nil {
		log.Fatal(err)
	}

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "UPDATE invoices SET paid = true WHERE id = 'inv_123'"); err != nil {
			return err
		}
		published, err := outbox.Publish(ctx, tx, outbox.Message{
			Tenant:         "acme",
			Type:           "invoice.paid",
			ObjectID:       "inv_123",
			Data:           map[string]any{"amount": 4200, "currency": "eur"},
			IdempotencyKey: "inv_123-paid",
		})
		if err != nil {
			return err
		}
		fmt.Println("invoice inv_123 is at version", published.Version)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: invoice inv_123 is at version 1
}

// Publish several events in one statement: all of them, or none.
func ExamplePublishMany() {
	ctx := context.Background()
	pool, cleanup, err := pgtest.NewPoolForExample(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	if _, err := pool.Exec(ctx, `INSERT INTO herald.tenants (id) VALUES ('acme')`); err != nil {
		log.Fatal(err)
	}

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		published, err := outbox.PublishMany(ctx, tx, []outbox.Message{
			{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_123", Data: map[string]any{"amount": 4200}},
			{Tenant: "acme", Type: "invoice.refunded", ObjectID: "inv_123", Data: map[string]any{"amount": 4200}},
			{Tenant: "acme", Type: "Invoice Paid", ObjectID: "inv_124", Data: map[string]any{}},
		})
		var bad *outbox.BatchError
		if errors.As(err, &bad) {
			fmt.Println("nothing published:", bad.Items[0].Index, bad.Items[0].Field)
			// Fix or drop the bad event and publish the others.
			published, err = outbox.PublishMany(ctx, tx, []outbox.Message{
				{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_123", Data: map[string]any{"amount": 4200}},
				{Tenant: "acme", Type: "invoice.refunded", ObjectID: "inv_123", Data: map[string]any{"amount": 4200}},
			})
		}
		if err != nil {
			return err
		}
		for _, p := range published {
			fmt.Println("inv_123 is at version", p.Version)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// nothing published: 2 type
	// inv_123 is at version 1
	// inv_123 is at version 2
}
