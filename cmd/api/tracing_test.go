package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/otlptest"
)

// With the standard OTEL_* variables the api exports a span per request
// to an OTLP/HTTP receiver. A publish over HTTP with a traceparent header
// is a child of the caller's span, and the publish a child of the request.
func TestRequestSpansContinueTheCallersTrace(t *testing.T) {
	t.Parallel()
	collector := otlptest.NewReceiver(t)
	cmd := command(t, []string{
		"HERALD_BOOTSTRAP_API_KEY=" + bootstrapKey,
		"HERALD_LOG_FORMAT=json",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.Endpoint,
		"OTEL_BSP_SCHEDULE_DELAY=50",
	})
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + listeningAddr(t, stderr)

	require.Equal(t, http.StatusOK, request(t, "GET", base+"/healthz", "").StatusCode)
	require.Equal(t, http.StatusCreated, request(t, "POST", base+"/v1/tenants", `{"id":"acme","name":"Acme"}`).StatusCode)
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		caller  = "00f067aa0ba902b7"
	)
	req, err := http.NewRequest("POST", base+"/v1/tenants/acme/messages", strings.NewReader(`{"event_type":"invoice.paid","object_id":"inv_1","data":{}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bootstrapKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+caller+"-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	server := collector.WaitFor(t, 10*time.Second, "the publish request's", func(s otlptest.Span) bool {
		return s.TraceID == traceID && s.ParentSpanID == caller
	})
	require.Equal(t, "herald-api", server.Service)
	require.Equal(t, "POST /v1/tenants/{tenantID}/messages", server.Name, "named after the route, not the path")
	require.Equal(t, "202", server.Attributes["http.response.status_code"])
	publish := collector.WaitFor(t, 10*time.Second, "herald.publish", func(s otlptest.Span) bool {
		return s.TraceID == traceID && s.Name == "herald.publish"
	})
	require.Equal(t, server.SpanID, publish.ParentSpanID, "the publish is a child of the request")
	require.Equal(t, "acme", publish.Attributes["herald.tenant"])

	// The batch publish continues the caller's trace the same way, with
	// one span for the batch.
	const batchCaller = "00f067aa0ba902b8"
	req, err = http.NewRequest("POST", base+"/v1/tenants/acme/messages/batch", strings.NewReader(`{"events":[{"event_type":"invoice.paid","object_id":"inv_2","data":{}},{"event_type":"invoice.paid","object_id":"inv_3","data":{}}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bootstrapKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+batchCaller+"-01")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	batchServer := collector.WaitFor(t, 10*time.Second, "the batch request's", func(s otlptest.Span) bool {
		return s.TraceID == traceID && s.ParentSpanID == batchCaller
	})
	require.Equal(t, "POST /v1/tenants/{tenantID}/messages/batch", batchServer.Name)
	batch := collector.WaitFor(t, 10*time.Second, "herald.publish_many", func(s otlptest.Span) bool {
		return s.TraceID == traceID && s.Name == "herald.publish_many"
	})
	require.Equal(t, batchServer.SpanID, batch.ParentSpanID, "the batch is a child of the request")
	require.Equal(t, "acme", batch.Attributes["herald.tenant"])

	other := collector.WaitFor(t, 10*time.Second, "the tenant's creation", func(s otlptest.Span) bool { return s.Name == "POST /v1/tenants" })
	require.Empty(t, other.ParentSpanID, "a request without traceparent starts a trace")
	for _, s := range collector.Spans() {
		require.NotContains(t, s.Name, "/healthz", "probes make no spans")
	}
}
