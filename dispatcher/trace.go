package dispatcher

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names the tracer of the fan-out's spans, by OpenTelemetry's
// convention the instrumenting package's import path.
const TracerName = "github.com/heraldhq/herald/dispatcher"

// The fan-out's span names.
const (
	// FanOutSpanName is one fan-out transaction's span, the root of a
	// trace of its own: it serves the messages of many producers.
	FanOutSpanName = "herald.fanout"
	// FanOutMessageSpanName is a message's part of a fan-out, in the trace
	// of the span that published it, linked to the transaction's span.
	FanOutMessageSpanName = "herald.fanout.message"
)

// tracedMessage is a claimed message that was published with a trace
// context, and how many endpoints it went to.
type tracedMessage struct {
	id          uuid.UUID
	traceparent string
	endpoints   int
}

// traceFanOut records a committed fan-out transaction that began at start:
// a span for the transaction, and one per traced message in its producer's
// trace. Both are made once the transaction has committed, so the empty
// polls of an idle outbox make none.
func (d *Dispatcher) traceFanOut(start time.Time, claimed, created int, traced []tracedMessage) {
	if d.tracer == nil {
		return
	}
	_, span := d.tracer.Start(context.Background(), FanOutSpanName,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(start),
		trace.WithAttributes(attribute.Int("herald.messages", claimed), attribute.Int("herald.deliveries", created)))
	defer span.End()
	batch := trace.Link{SpanContext: span.SpanContext()}
	for _, m := range traced {
		parent := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": m.traceparent})
		_, s := d.tracer.Start(parent, FanOutMessageSpanName,
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithTimestamp(start),
			trace.WithLinks(batch),
			trace.WithAttributes(attribute.String("herald.message_id", m.id.String()), attribute.Int("herald.endpoints", m.endpoints)))
		s.End()
	}
}
