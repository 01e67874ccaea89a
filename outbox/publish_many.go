package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// MaxBatch is the most messages PublishMany (and herald.publish_many, and
// the API's batch route) publishes at once: 1000.
const MaxBatch = 1000

// PublishMany publishes msgs inside the producer's transaction tx, in one
// statement (one round trip), all or nothing, and returns one Published per
// message in order. Every message must be for the same tenant. Messages
// about one object take consecutive versions in slice order; a message
// whose IdempotencyKey was published before is not published again and
// gets the first message back (Duplicate). Commit and rollback work as for
// Publish. An empty msgs publishes nothing and returns nil.
//
// Errors, in the order they are checked: more than MaxBatch messages, or
// an unknown tenant, return a *ValidationError (Field "events" or
// "tenant"); bad messages return a *BatchError listing each of them, by
// index, with its first problem. A key repeated inside msgs is a problem
// of the later message. Either way nothing is published and tx is left
// usable. Any other error comes from the database and aborts tx.
//
// The batch is one span, "herald.publish_many", made as Publish makes its
// own; every message keeps that span's context as its traceparent.
func PublishMany(ctx context.Context, tx pgx.Tx, msgs []Message) ([]Published, error) {
	if tx == nil {
		return nil, errors.New("publish many: the transaction is nil; pass the producer's pgx.Tx")
	}
	return publishBatch(ctx, tx, msgs)
}

// PublishManyPool is PublishMany on pool: the statement is its own
// transaction.
func PublishManyPool(ctx context.Context, pool *pgxpool.Pool, msgs []Message) ([]Published, error) {
	return publishBatch(ctx, pool, msgs)
}

// publishBatch publishes msgs in a "herald.publish_many" span, whose
// context the messages keep.
func publishBatch(ctx context.Context, db querier, msgs []Message) ([]Published, error) {
	attrs := []attribute.KeyValue{attribute.Int("herald.batch_size", len(msgs))}
	if len(msgs) > 0 {
		attrs = append(attrs, attribute.String("herald.tenant", msgs[0].Tenant))
	}
	ctx, span := otel.Tracer(tracerName).Start(ctx, "herald.publish_many",
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	defer span.End()
	p, err := publishMany(ctx, db, msgs)
	if err != nil {
		err = fmt.Errorf("publish many: %w", err)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	return p, nil
}

// BatchError is PublishMany's error for a batch holding bad messages.
// Nothing of the batch was published.
type BatchError struct {
	// Items are the messages at fault in index order, each with its first
	// problem.
	Items []ItemError
}

// ItemError is one bad message of a batch.
type ItemError struct {
	// Index is the message's position in the batch, from 0.
	Index int
	ValidationError
}

func (e *BatchError) add(index int, v *ValidationError) {
	e.Items = append(e.Items, ItemError{Index: index, ValidationError: *v})
}

// batchErrorShown is how many items BatchError's message names.
const batchErrorShown = 3

func (e *BatchError) Error() string {
	parts := make([]string, 0, batchErrorShown+1)
	for i, item := range e.Items {
		if i == batchErrorShown {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Items)-batchErrorShown))
			break
		}
		parts = append(parts, fmt.Sprintf("message %d: %s", item.Index, item.ValidationError.Error()))
	}
	return strings.Join(parts, "; ")
}
