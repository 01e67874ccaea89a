package delivery

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names the tracer of the attempts' spans, by OpenTelemetry's
// convention the instrumenting package's import path.
const TracerName = "github.com/heraldhq/herald/delivery"

// AttemptSpanName is the name of an attempt's span.
const AttemptSpanName = "herald.attempt"

// traceAttempt records a recorded attempt as a span in its message's trace:
// a child of the span that published the message (its traceparent, stored
// by outbox.Publish), linked to the River job's span that made it. The span
// runs from the request's start to its end; its attributes are the
// endpoint, the HTTP status and the outcome. A message published without a
// trace context gets a trace of its own.
func (w *Worker) traceAttempt(r recording, dec decision) {
	if w.tracer == nil {
		return
	}
	parent := context.Background()
	if r.d.traceparent != "" {
		parent = propagation.TraceContext{}.Extract(parent, propagation.MapCarrier{"traceparent": r.d.traceparent})
	}
	attrs := []attribute.KeyValue{
		attribute.String("herald.delivery_id", r.d.id.String()),
		attribute.String("herald.message_id", r.d.messageID.String()),
		attribute.String("herald.endpoint_id", r.d.endpointID.String()),
		attribute.Int("herald.attempt", dec.number),
		attribute.String("herald.trigger", string(r.trigger)),
		attribute.String("herald.outcome", string(dec.outcome.Verdict)),
		attribute.String("http.request.method", "POST"),
	}
	if u, err := url.Parse(r.d.url); err == nil {
		// Without its query, which may carry a token.
		attrs = append(attrs, attribute.String("url.full", (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()),
			attribute.String("server.address", u.Hostname()))
	}
	if r.a.result.StatusCode != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", r.a.result.StatusCode))
	}
	if dec.outcome.Problem != "" {
		attrs = append(attrs, attribute.String("herald.problem", dec.outcome.Problem))
	}
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(r.a.startedAt),
		trace.WithAttributes(attrs...),
	}
	if r.a.job.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: r.a.job}))
	}
	_, span := w.tracer.Start(parent, AttemptSpanName, opts...)
	if dec.outcome.Verdict != Succeeded {
		span.SetStatus(codes.Error, dec.outcome.Problem)
	}
	span.End(trace.WithTimestamp(dec.ended))
}
