package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the tracer of Publish's spans, by OpenTelemetry's
// convention the instrumenting package's import path.
const tracerName = "github.com/heraldhq/herald/outbox"

// traceparent is sc as a W3C traceparent header value, or nil when sc is
// not valid (the producer is not tracing).
func traceparent(sc trace.SpanContext) *string {
	if !sc.IsValid() {
		return nil
	}
	tp := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
	return &tp
}

// endSpan records the publish's result on its span and ends it.
func endSpan(span trace.Span, p Published, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(
			attribute.String("herald.message_id", p.ID.String()),
			attribute.Int64("herald.object_version", p.Version),
			attribute.Bool("herald.duplicate", p.Duplicate),
		)
	}
	span.End()
}

// Publish publishes msg inside the producer's transaction tx. The message is
// visible to the dispatcher, and the object's version taken, only when tx
// commits; a rollback leaves no trace. Concurrent publishers for one object
// wait for each other's commit (the version is taken under a row lock), so
// keep transactions that publish short.
//
// Bad input returns a *ValidationError and leaves tx usable: the producer can
// still commit its other work. Any other error comes from the database and
// aborts tx like a failed statement would.
//
// The publish is an OpenTelemetry span, "herald.publish", from the global
// tracer provider (otel.SetTracerProvider; a no-op until the program
// installs one), a child of the span in ctx. The message keeps that span's
// context as its traceparent, so the spans of its fan-out and of every
// attempt to deliver it join the producer's trace. A ctx without a span
// context stores none.
func Publish(ctx context.Context, tx pgx.Tx, msg Message) (p Published, err error) {
	if tx == nil {
		return Published{}, errors.New("publish: the transaction is nil; pass the producer's pgx.Tx")
	}
	return publishOne(ctx, tx, msg)
}

// PublishPool publishes msg on pool in one statement, which is its own
// transaction: one round trip to Postgres. Use it for events that go with
// no other write.
//
// The publish is a span as for Publish.
func PublishPool(ctx context.Context, pool *pgxpool.Pool, msg Message) (Published, error) {
	return publishOne(ctx, pool, msg)
}

// publishOne publishes msg in a "herald.publish" span, whose context the
// message keeps.
func publishOne(ctx context.Context, db querier, msg Message) (p Published, err error) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, "herald.publish",
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("herald.tenant", msg.Tenant),
			attribute.String("herald.event_type", msg.Type),
			attribute.String("herald.object_id", msg.ObjectID),
		))
	defer func() { endSpan(span, p, err) }()
	published, err := publishMany(ctx, db, []Message{msg})
	var batch *BatchError
	if errors.As(err, &batch) {
		// One message: its problem is the message's own.
		err = &batch.Items[0].ValidationError
	}
	if err != nil {
		return Published{}, msg.wrap(err)
	}
	return published[0], nil
}

// wrap puts the event type, when there is one, in front of err.
func (m Message) wrap(err error) error {
	if m.Type == "" {
		return fmt.Errorf("publish: %w", err)
	}
	return fmt.Errorf("publish %q: %w", m.Type, err)
}

// querier is a transaction or a pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// publishMany publishes msgs in one statement and returns what it
// published, in order; see PublishMany for its errors. The messages keep
// the span context in ctx as their traceparent.
func publishMany(ctx context.Context, db querier, msgs []Message) ([]Published, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	if len(msgs) > MaxBatch {
		return nil, &ValidationError{Field: "events", Problem: fmt.Sprintf("holds %d messages; at most %d (outbox.MaxBatch) are published at once, so split them", len(msgs), MaxBatch)}
	}
	tenant := msgs[0].Tenant
	var (
		types   = make([]string, len(msgs))
		objects = make([]string, len(msgs))
		data    = make([]string, len(msgs))
		keys    = make([]*string, len(msgs))
		// channels is nil unless a message has some: most publishes
		// carry none, and NULL costs the function nothing.
		channels [][]string
		bad      BatchError
	)
	for i, m := range msgs {
		if m.Tenant != tenant {
			bad.add(i, &ValidationError{Field: "tenant", Problem: fmt.Sprintf("is %s, not the batch's %s; publish each tenant's events in a batch of their own", quoteJSON(m.Tenant), quoteJSON(tenant))})
			continue
		}
		encoded, err := m.encode()
		var invalid *ValidationError
		if errors.As(err, &invalid) {
			bad.add(i, invalid)
			continue
		}
		types[i], objects[i], data[i] = m.Type, m.ObjectID, encoded
		if m.IdempotencyKey != "" {
			keys[i] = &msgs[i].IdempotencyKey
		}
		if len(m.Channels) > 0 {
			if channels == nil {
				channels = make([][]string, len(msgs))
			}
			channels[i] = m.Channels
		}
	}
	if len(bad.Items) > 0 {
		return nil, &bad
	}
	var channelsJSON []byte
	if channels != nil {
		channelsJSON, _ = json.Marshal(channels) // [][]string always encodes; a nil slice is null
	}
	rows, err := db.Query(ctx, tryPublishMany, tenant, types, objects, data, keys, traceparent(trace.SpanContextFromContext(ctx)), channelsJSON)
	if err != nil {
		return nil, err
	}
	published := make([]Published, 0, len(msgs))
	var (
		index                 *int32
		id                    uuid.NullUUID
		version               *int64
		duplicate             bool
		createdAt             *time.Time
		body                  *string
		problemField, problem *string
		whole                 *ValidationError
	)
	_, err = pgx.ForEachRow(rows, []any{&index, &id, &version, &duplicate, &createdAt, &body, &problemField, &problem}, func() error {
		switch {
		case problem != nil && index == nil:
			whole = &ValidationError{Field: *problemField, Problem: *problem}
		case problem != nil:
			bad.add(int(*index), &ValidationError{Field: *problemField, Problem: *problem})
		default:
			p := Published{ID: id.UUID, Version: *version, Duplicate: duplicate, CreatedAt: *createdAt}
			if body != nil {
				p.Body = json.RawMessage(*body)
			}
			published = append(published, p)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case whole != nil:
		return nil, whole
	case len(bad.Items) > 0:
		return nil, &bad
	case len(published) != len(msgs):
		return nil, fmt.Errorf("herald.try_publish_many returned %d results for %d messages", len(published), len(msgs))
	}
	return published, nil
}
