package outbox

import (
	"context"
	"errors"
	"fmt"

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
	ctx, span := otel.Tracer(tracerName).Start(ctx, "herald.publish",
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("herald.tenant", msg.Tenant),
			attribute.String("herald.event_type", msg.Type),
			attribute.String("herald.object_id", msg.ObjectID),
		))
	defer func() { endSpan(span, p, err) }()
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
	err = tx.QueryRow(ctx, tryPublish, msg.Tenant, msg.Type, msg.ObjectID, data, key, traceparent(span.SpanContext())).
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
