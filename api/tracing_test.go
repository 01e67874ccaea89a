package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/heraldhq/herald/api"
)

// callerTraceparent is a traceparent header a tracing producer sends.
const callerTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// storedTraceparent is the traceparent kept with the message id.
func (b *testBundle) storedTraceparent(t *testing.T, id string) string {
	t.Helper()
	var tp *string
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT traceparent FROM herald.messages WHERE id = $1", id).Scan(&tp))
	require.NotNil(t, tp, "message %s keeps no trace context", id)
	return *tp
}

// With tracing on, a message published over HTTP, alone or in a batch,
// keeps a context in the trace its request's traceparent header names, so
// its fan-out and attempts join the producer's trace.
func TestPublishKeepsTheCallersTraceContext(t *testing.T) {
	t.Parallel()
	b := setup(t).withConfig(t, func(cfg *api.Config) { cfg.TracerProvider = sdktrace.NewTracerProvider() })
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"

	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", `{"event_type": "invoice.paid", "object_id": "inv_1", "data": {}}`, "traceparent", callerTraceparent)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	var one api.Message
	resp.Decode(t, &one)
	tp := b.storedTraceparent(t, one.ID.String())
	require.True(t, strings.HasPrefix(tp, "00-"+traceID+"-"), "the single publish is in the caller's trace: %s", tp)

	resp = b.do(t, b.acme, "POST", "/v1/tenants/acme/messages/batch", batchOf(event("inv_2"), event("inv_3")), "traceparent", callerTraceparent)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	var batch batchResults
	resp.Decode(t, &batch)
	require.Len(t, batch.Data, 2)
	for _, r := range batch.Data {
		tp := b.storedTraceparent(t, r.ID)
		require.True(t, strings.HasPrefix(tp, "00-"+traceID+"-"), "the batch is in the caller's trace: %s", tp)
	}
}

// With tracing on, a job the api queues (here a test event's) carries the
// request's trace context in its metadata, so the dispatcher's span for the
// job joins the caller's trace; with tracing off it carries none.
func TestQueuedJobsCarryTheRequestsTraceContext(t *testing.T) {
	t.Parallel()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	newestJobTraceparent := func(b *testBundle) *string {
		var tp *string
		require.NoError(t, b.pool.QueryRow(b.ctx,
			"SELECT metadata->>'traceparent' FROM herald.river_job ORDER BY id DESC LIMIT 1").Scan(&tp))
		return tp
	}

	traced := setup(t).withConfig(t, func(cfg *api.Config) { cfg.TracerProvider = sdktrace.NewTracerProvider() })
	e := traced.createEndpoint(t, traced.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	resp := traced.do(t, traced.acme, "POST", "/v1/tenants/acme/endpoints/"+e.ID+"/test", nil, "traceparent", callerTraceparent)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	tp := newestJobTraceparent(traced)
	require.NotNil(t, tp, "the test event's job carries no trace context")
	require.True(t, strings.HasPrefix(*tp, "00-"+traceID+"-"), "the job is in the caller's trace: %s", *tp)

	untraced := setup(t)
	e = untraced.createEndpoint(t, untraced.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	resp = untraced.do(t, untraced.acme, "POST", "/v1/tenants/acme/endpoints/"+e.ID+"/test", nil, "traceparent", callerTraceparent)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	require.Nil(t, newestJobTraceparent(untraced), "with tracing off no trace context is kept")
}
