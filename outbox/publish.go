package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Publish publishes msg inside the producer's transaction tx. The message is
// visible to the dispatcher, and the object's version taken, only when tx
// commits; a rollback leaves no trace. Concurrent publishers for one object
// wait for each other's commit (the version is taken under a row lock), so
// keep transactions that publish short.
//
// Bad input returns a *ValidationError and leaves tx usable: the producer can
// still commit its other work. Any other error comes from the database and
// aborts tx like a failed statement would.
func Publish(ctx context.Context, tx pgx.Tx, msg Message) (Published, error) {
	if tx == nil {
		return Published{}, errors.New("publish: the transaction is nil; pass the producer's pgx.Tx")
	}
	data, err := msg.encode()
	if err != nil {
		return Published{}, msg.wrap(err)
	}
	var key *string
	if msg.IdempotencyKey != "" {
		key = &msg.IdempotencyKey
	}
	var (
		id                    uuid.NullUUID
		version               *int64
		duplicate             bool
		problemField, problem *string
	)
	err = tx.QueryRow(ctx, tryPublish, msg.Tenant, msg.Type, msg.ObjectID, data, key).
		Scan(&id, &version, &duplicate, &problemField, &problem)
	if err != nil {
		return Published{}, msg.wrap(err)
	}
	if problem != nil {
		return Published{}, msg.wrap(&ValidationError{Field: *problemField, Problem: *problem})
	}
	return Published{ID: id.UUID, Version: *version, Duplicate: duplicate}, nil
}

// wrap puts the event type, when there is one, in front of err.
func (m Message) wrap(err error) error {
	if m.Type == "" {
		return fmt.Errorf("publish: %w", err)
	}
	return fmt.Errorf("publish %q: %w", m.Type, err)
}

// PublishPool publishes msg in a transaction of its own on pool, for events
// that go with no other write.
func PublishPool(ctx context.Context, pool *pgxpool.Pool, msg Message) (Published, error) {
	var p Published
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		p, err = Publish(ctx, tx, msg)
		return err
	})
	return p, err
}
