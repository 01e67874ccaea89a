package flagenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/version"
)

// Tracing is a program's OpenTelemetry tracing, configured by the standard
// OTEL_* variables. It is off unless OTEL_TRACES_EXPORTER is "otlp" or an
// OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turns it off whatever else is set. Spans go by
// OTLP over HTTP (protobuf) to the endpoint, http://localhost:4318 when
// none is set; the exporter reads its other OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, compression, certificates) itself, the SDK reads
// OTEL_TRACES_SAMPLER (default parentbased_always_on), OTEL_BSP_* and
// OTEL_RESOURCE_ATTRIBUTES, and OTEL_SERVICE_NAME overrides the service
// name the program gives.
type Tracing struct {
	// Provider receives the program's spans; nil when tracing is off.
	Provider trace.TracerProvider
	shutdown func(context.Context) error
}

// StartTracing reads the OTEL_* variables and, when tracing is on, installs
// its provider as the global one (outbox.Publish uses it) with the W3C
// trace-context and baggage propagators. service names the program in its
// spans' resource, like "herald-api".
func StartTracing(ctx context.Context, service string) (*Tracing, error) {
	on, err := tracingOn()
	if err != nil || !on {
		return &Tracing{}, err
	}
	if p := firstSet("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported; Herald exports spans with http/protobuf (unset it, or point OTEL_EXPORTER_OTLP_ENDPOINT at an OTLP/HTTP receiver, port 4318 by convention)", p)
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: OTLP exporter: %w", err)
	}
	// Later options win: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
	// override the program's own name.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceVersion(version.String())),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: resource from OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return &Tracing{Provider: provider, shutdown: provider.Shutdown}, nil
}

// TracingFlushTimeout bounds sending the last spans when a program stops.
const TracingFlushTimeout = 5 * time.Second

// Stop sends the spans still buffered, for at most TracingFlushTimeout, and
// stops the exporter; a failure is logged. It does nothing when tracing is
// off.
func (t *Tracing) Stop(logger *slog.Logger) {
	if t.shutdown == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), TracingFlushTimeout)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		logger.Warn("OpenTelemetry: spans not sent at exit", "error", err)
	}
}

// tracingOn reads whether the OTEL_* variables turn tracing on.
func tracingOn() (bool, error) {
	if v := os.Getenv("OTEL_SDK_DISABLED"); v != "" {
		disabled, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("OTEL_SDK_DISABLED=%q is not a boolean; use true or false", v)
		}
		if disabled {
			return false, nil
		}
	}
	switch exporter := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exporter {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return firstSet("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") != "", nil
	default:
		return false, errors.New("OTEL_TRACES_EXPORTER=" + exporter + " is not supported; use otlp (with OTEL_EXPORTER_OTLP_ENDPOINT) or none")
	}
}

// firstSet returns the value of the first variable that is set and not
// empty.
func firstSet(variables ...string) string {
	for _, v := range variables {
		if value := os.Getenv(v); value != "" {
			return value
		}
	}
	return ""
}
