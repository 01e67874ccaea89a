package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/otlptest"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// A dispatcher started with the standard OTEL_* variables exports its spans
// to an OTLP/HTTP receiver, and a message's fan-out and attempts are spans
// in the trace of the producer that published it: the producer's span, its
// publish (outbox.Publish), then the fan-out and each attempt under the
// publish. Not parallel: the producer's side installs the global tracer
// provider, as a producer's program would.
func TestAttemptSpansJoinTheProducersTrace(t *testing.T) {
	b, ctx := setup(t)
	collector := otlptest.NewReceiver(t)
	hooks := webhooktest.NewReceiver(t, webhooktest.Status(503, 200))
	endpointID, _ := b.endpoint(t, ctx, hooks.URL+"/hooks?token=s3cret")

	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(collector.Endpoint+otlptest.TracesPath))
	require.NoError(t, err)
	producer := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("shop"))))
	otel.SetTracerProvider(producer)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	checkoutCtx, checkout := producer.Tracer("shop").Start(ctx, "checkout")
	message := b.publish(t, checkoutCtx)
	checkout.End()
	require.NoError(t, producer.ForceFlush(ctx))

	b.start(t,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+collector.Endpoint,
		"OTEL_BSP_SCHEDULE_DELAY=50",
		"HERALD_RETRY_BASE=50ms",
	)
	require.Eventually(t, func() bool { return b.status(t, ctx, message) == "succeeded" }, 30*time.Second, 50*time.Millisecond)

	traceID := checkout.SpanContext().TraceID().String()
	inTrace := func(name string) func(otlptest.Span) bool {
		return func(s otlptest.Span) bool { return s.TraceID == traceID && s.Name == name }
	}
	publish := collector.WaitFor(t, 10*time.Second, "herald.publish", inTrace("herald.publish"))
	require.Equal(t, checkout.SpanContext().SpanID().String(), publish.ParentSpanID, "the publish is a child of the producer's span")
	require.Equal(t, message.String(), publish.Attributes["herald.message_id"])

	fanOut := collector.WaitFor(t, 10*time.Second, "herald.fanout.message", inTrace(dispatcher.FanOutMessageSpanName))
	require.Equal(t, "herald-dispatcher", fanOut.Service)
	require.Equal(t, publish.SpanID, fanOut.ParentSpanID, "the fan-out is a child of the publish")
	require.Equal(t, "1", fanOut.Attributes["herald.endpoints"])
	require.Len(t, fanOut.Links, 1, "linked to the fan-out transaction's span")

	succeeded := collector.WaitFor(t, 10*time.Second, "a successful attempt", func(s otlptest.Span) bool {
		return inTrace(delivery.AttemptSpanName)(s) && s.Attributes["herald.outcome"] == "succeeded"
	})
	failed := collector.WaitFor(t, 10*time.Second, "a failed attempt", func(s otlptest.Span) bool {
		return inTrace(delivery.AttemptSpanName)(s) && s.Attributes["herald.outcome"] == "retry"
	})
	for _, attempt := range []otlptest.Span{failed, succeeded} {
		require.Equal(t, "herald-dispatcher", attempt.Service)
		require.Equal(t, publish.SpanID, attempt.ParentSpanID, "every attempt is a child of the publish")
		require.Equal(t, endpointID.String(), attempt.Attributes["herald.endpoint_id"])
		require.Equal(t, hooks.URL+"/hooks", attempt.Attributes["url.full"], "the URL without its query, which may hold a token")
		require.Equal(t, message.String(), attempt.Attributes["herald.message_id"])
		require.Len(t, attempt.Links, 1, "linked to the River job that made it")
		job := collector.WaitFor(t, 10*time.Second, "the attempt's River job", func(s otlptest.Span) bool { return s.SpanID == attempt.Links[0].SpanID })
		require.Contains(t, job.Name, "river.work")
	}
	require.Equal(t, "1", failed.Attributes["herald.attempt"])
	require.Equal(t, "503", failed.Attributes["http.response.status_code"])
	require.True(t, failed.Error, "a failed attempt's span is an error")
	require.Equal(t, "2", succeeded.Attributes["herald.attempt"])
	require.Equal(t, "200", succeeded.Attributes["http.response.status_code"])
	require.False(t, succeeded.Error)

	t.Logf("trace %s:\n%s", traceID, collector.Tree(traceID, "herald.attempt", "http.response.status_code", "herald.outcome"))
}

// A resend requested through the api with a traceparent header is traced
// end to end: the request's span, River's insert of the resend's job under
// it (the api's insert-only client), and the dispatcher's span working that
// job, all in the caller's trace; the attempt it makes, in its message's
// trace, links to that job span.
func TestResendJobSpanJoinsTheRequestsTrace(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	collector := otlptest.NewReceiver(t)
	hooks := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpointID, _ := b.endpoint(t, ctx, hooks.URL+"/hooks")
	message := b.publish(t, ctx)
	b.start(t,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+collector.Endpoint,
		"OTEL_BSP_SCHEDULE_DELAY=50",
	)
	require.Eventually(t, func() bool { return b.status(t, ctx, message) == "succeeded" }, 30*time.Second, 50*time.Millisecond)

	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(collector.Endpoint+otlptest.TracesPath))
	require.NoError(t, err)
	apiTracing := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("herald-api"))))
	t.Cleanup(func() { _ = apiTracing.Shutdown(context.Background()) })
	server, err := api.New(api.Config{Pool: b.pool, Store: b.store, TracerProvider: apiTracing})
	require.NoError(t, err)
	httpServer := httptest.NewServer(server.Handler())
	t.Cleanup(httpServer.Close)
	_, key, err := auth.CreateAPIKey(ctx, b.pool, tenant, "resend")
	require.NoError(t, err)

	const (
		traceID = "5bf92f3577b34da6a3ce929d0e0e4736"
		caller  = "10f067aa0ba902b7"
	)
	req, err := http.NewRequest("POST", httpServer.URL+"/v1/tenants/"+tenant+"/messages/"+message.String()+"/endpoints/"+endpointID.String()+"/resend", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("traceparent", "00-"+traceID+"-"+caller+"-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	request := collector.WaitFor(t, 10*time.Second, "the resend request's", func(s otlptest.Span) bool {
		return s.TraceID == traceID && s.ParentSpanID == caller
	})
	require.Equal(t, "herald-api", request.Service)
	require.Equal(t, "POST /v1/tenants/{tenantID}/messages/{messageID}/endpoints/{endpointID}/resend", request.Name)
	insert := collector.WaitFor(t, 10*time.Second, "the resend job's insert", func(s otlptest.Span) bool {
		return s.TraceID == traceID && s.Name == "river.insert_many"
	})
	require.Equal(t, request.SpanID, insert.ParentSpanID, "the job's insert is a child of the request")
	attempt := collector.WaitFor(t, 30*time.Second, "the resend's attempt", func(s otlptest.Span) bool {
		return s.Name == delivery.AttemptSpanName && s.Attributes["herald.attempt"] == "2"
	})
	require.Equal(t, "succeeded", attempt.Attributes["herald.outcome"])
	require.Len(t, attempt.Links, 1, "linked to the job that made it")
	work := collector.WaitFor(t, 10*time.Second, "the resend job's work", func(s otlptest.Span) bool { return s.SpanID == attempt.Links[0].SpanID })
	require.Equal(t, "herald-dispatcher", work.Service)
	require.Equal(t, "river.work/"+delivery.Kind, work.Name)
	require.Equal(t, traceID, work.TraceID, "the dispatcher's job span is in the caller's trace")
	require.Equal(t, insert.SpanID, work.ParentSpanID, "the job span is a child of its insert")

	t.Logf("trace %s:\n%s", traceID, collector.Tree(traceID, "http.response.status_code", "kind", "status"))
}
