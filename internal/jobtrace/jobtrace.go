// Package jobtrace traces River's jobs with OpenTelemetry (otelriver): a
// span when a job is inserted, carrying the inserter's trace context in the
// job's metadata, and a span when a dispatcher works it, in that same trace.
package jobtrace

import (
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
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
	return []rivertype.Middleware{otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider:              tp,
		EnableTracePropagation:      true,
		EnableWorkSpanJobKindSuffix: true,
	})}
}
