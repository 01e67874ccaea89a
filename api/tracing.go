package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceRequests makes every request a server span (otelhttp) in the trace
// its traceparent header names, or in a new one: a producer that traces
// and publishes over HTTP has the publish, and so every attempt of the
// message, in its own trace. Once routed, the span is named after the route
// ("POST /v1/tenants/{tenantID}/messages"), not the path, whose ids would
// make a name per object. Probes and scrapes (untracedPaths) make no
// spans. Without a tracer provider it does nothing.
func traceRequests(provider trace.TracerProvider) func(http.Handler) http.Handler {
	if provider == nil {
		return func(next http.Handler) http.Handler { return next }
	}
	return func(next http.Handler) http.Handler {
		named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if route := chi.RouteContext(r.Context()).RoutePattern(); route != "" {
				span := trace.SpanFromContext(r.Context())
				span.SetName(r.Method + " " + route)
				span.SetAttributes(attribute.String("http.route", route))
			}
		})
		return otelhttp.NewHandler(named, "herald.api",
			otelhttp.WithTracerProvider(provider),
			otelhttp.WithPropagators(propagation.TraceContext{}),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
			otelhttp.WithFilter(traced),
		)
	}
}

// untracedPaths are the routes that load balancers and Prometheus call
// every few seconds: spans of them would bury the requests worth a trace.
var untracedPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

func traced(r *http.Request) bool { return !untracedPaths[r.URL.Path] }
