package outbox_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/heraldhq/herald/outbox"
)

// producerSpan is a span context a producer's tracing put in its context.
var producerSpan = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
	SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
	TraceFlags: trace.FlagsSampled,
	Remote:     true,
})

func (b *testBundle) traceparent(t *testing.T, ctx context.Context, p outbox.Published) *string {
	t.Helper()
	var tp *string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT traceparent FROM herald.messages WHERE id = $1", p.ID).Scan(&tp))
	return tp
}

// The producer's trace context is stored with the message, so that the
// dispatcher's spans for it join the producer's trace.
func TestPublishKeepsTheProducersTraceContext(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	untraced := b.publishCommitted(t, ctx, invoicePaid("inv_1"))
	require.Nil(t, b.traceparent(t, ctx, untraced), "a producer that does not trace stores no context")

	// No tracer provider is installed: Publish's span is the no-op one,
	// which carries the producer's context on.
	traced := b.publishCommitted(t, trace.ContextWithSpanContext(ctx, producerSpan), invoicePaid("inv_2"))
	tp := b.traceparent(t, ctx, traced)
	require.NotNil(t, tp)
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", *tp)
}

// With the program's tracer provider installed, the publish is a span of
// its own, a child of the producer's, and the message carries the publish
// span's context. Not parallel: it installs the global provider.
func TestPublishSpanIsTheMessagesParent(t *testing.T) {
	b, ctx := setup(t)
	spans := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	// Back to no tracing (the global provider cannot be set to its own
	// default again once a provider was installed).
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	p, err := outbox.PublishPool(trace.ContextWithSpanContext(ctx, producerSpan), b.pool, invoicePaid("inv_1"))
	require.NoError(t, err)

	ended := spans.Ended()
	require.Len(t, ended, 1)
	span := ended[0]
	require.Equal(t, "herald.publish", span.Name())
	require.Equal(t, producerSpan.SpanID(), span.Parent().SpanID())
	require.Equal(t, producerSpan.TraceID(), span.SpanContext().TraceID())
	tp := b.traceparent(t, ctx, p)
	require.NotNil(t, tp)
	require.Equal(t, "00-"+span.SpanContext().TraceID().String()+"-"+span.SpanContext().SpanID().String()+"-01", *tp)
}

// herald.publish takes a traceparent for producers in other languages and
// refuses one that is malformed.
func TestSQLPublishTraceparent(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	var p outbox.Published
	err := b.pool.QueryRow(ctx, `SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_1', '{}',
		traceparent => '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')`).Scan(&p.ID)
	require.NoError(t, err)
	tp := b.traceparent(t, ctx, p)
	require.NotNil(t, tp)
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", *tp)

	_, err = b.pool.Exec(ctx, `SELECT herald.publish('acme', 'invoice.paid', 'inv_1', '{}', traceparent => 'nope')`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Contains(t, pgErr.Message, `herald.publish: traceparent "nope" is not a W3C traceparent`)
}

// PublishMany keeps the producer's trace context on every message of the
// batch; with a tracer provider installed the batch is one span, a child
// of the producer's, and the messages carry its context. Not parallel: it
// installs the global provider.
func TestPublishManyKeepsTheProducersTraceContext(t *testing.T) {
	b, ctx := setup(t)

	untraced, err := outbox.PublishManyPool(ctx, b.pool, []outbox.Message{invoicePaid("inv_1")})
	require.NoError(t, err)
	require.Nil(t, b.traceparent(t, ctx, untraced[0]), "a producer that does not trace stores no context")

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	traced, err := outbox.PublishMany(trace.ContextWithSpanContext(ctx, producerSpan), tx, []outbox.Message{invoicePaid("inv_2"), invoicePaid("inv_3")})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	for _, p := range traced {
		tp := b.traceparent(t, ctx, p)
		require.NotNil(t, tp)
		require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", *tp)
	}

	spans := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	published, err := outbox.PublishManyPool(trace.ContextWithSpanContext(ctx, producerSpan), b.pool, []outbox.Message{invoicePaid("inv_4"), invoicePaid("inv_5")})
	require.NoError(t, err)
	ended := spans.Ended()
	require.Len(t, ended, 1)
	span := ended[0]
	require.Equal(t, "herald.publish_many", span.Name())
	require.Equal(t, producerSpan.SpanID(), span.Parent().SpanID())
	for _, p := range published {
		tp := b.traceparent(t, ctx, p)
		require.NotNil(t, tp)
		require.Equal(t, "00-"+span.SpanContext().TraceID().String()+"-"+span.SpanContext().SpanID().String()+"-01", *tp)
	}
}

// herald.publish_many takes the batch's traceparent and refuses one that
// is malformed, publishing nothing.
func TestSQLPublishManyTraceparent(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	rows, err := b.pool.Query(ctx, `SELECT message_id FROM herald.publish_many('acme',
		'[{"type": "invoice.paid", "object_id": "inv_1", "data": {}}, {"type": "invoice.paid", "object_id": "inv_2", "data": {}}]',
		traceparent => '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')`)
	require.NoError(t, err)
	var published []outbox.Published
	for rows.Next() {
		var p outbox.Published
		require.NoError(t, rows.Scan(&p.ID))
		published = append(published, p)
	}
	require.NoError(t, rows.Err())
	require.Len(t, published, 2)
	for _, p := range published {
		tp := b.traceparent(t, ctx, p)
		require.NotNil(t, tp)
		require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", *tp)
	}

	_, err = b.pool.Exec(ctx, `SELECT * FROM herald.publish_many('acme', '[{"type": "invoice.paid", "object_id": "inv_3", "data": {}}]', traceparent => 'nope')`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Contains(t, pgErr.Message, `herald.publish_many: traceparent "nope" is not a W3C traceparent`)
	require.Equal(t, 2, b.messageCount(t, ctx), "nothing of the refused batch is published")
}
