// Package jobtrace traces River's jobs with OpenTelemetry (otelriver): a
// span when a job is inserted, carrying the inserter's trace context in the
// job's metadata, and a span when a dispatcher works it, in that same trace.
package jobtrace

import (
	"context"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Middleware is the River middleware that traces jobs through tp, for
// river.Config.Middleware: the api's and portal's insert-only clients and
// the dispatcher's working client all use it, so a job inserted in a
// request's trace is worked in that trace. It is nil when tp is nil
// (tracing off).
func Middleware(tp trace.TracerProvider) []rivertype.Middleware {
	if tp == nil {
		return nil
	}
	return []rivertype.Middleware{
		&workInInsertersTrace{},
		otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
			TracerProvider:              tp,
			EnableTracePropagation:      true,
			EnableWorkSpanJobKindSuffix: true,
		}),
	}
}

// workInInsertersTrace makes the span that inserted a job (its traceparent
// in the job's metadata) the parent of the span otelriver starts to work
// it, which otelriver alone only links to, in a trace of its own: Herald's
// jobs run seconds after the request or publish that queued them (a
// resend, a replay, a delivery), and whoever follows that request's trace
// expects to see the work in it. Retries of a job, however late, stay in
// the trace, as attempts stay in their message's. It comes before
// otelriver in the list, so it wraps it.
type workInInsertersTrace struct{ river.MiddlewareDefaults }

func (*workInInsertersTrace) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	var metadata map[string]any
	if err := json.Unmarshal(job.Metadata, &metadata); err != nil {
		return doInner(ctx)
	}
	if traceparent, ok := metadata["traceparent"].(string); ok {
		carrier := propagation.MapCarrier{"traceparent": traceparent}
		if tracestate, ok := metadata["tracestate"].(string); ok {
			carrier["tracestate"] = tracestate
		}
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	}
	return doInner(ctx)
}
