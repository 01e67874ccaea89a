// Package otlptest is the receiving side of tracing tests: an OTLP/HTTP
// trace receiver on loopback that decodes the protobuf spans a program
// exports, as a collector would, and shows them as trees.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// TracesPath is where OTLP/HTTP exporters send spans.
const TracesPath = "/v1/traces"

// Span is one span as the receiver decoded it. Ids are lower-case hex, as
// in a traceparent; ParentSpanID is empty for a root span.
type Span struct {
	Service      string
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Start, End   time.Time
	// Attributes are the span's attributes, each value as text.
	Attributes map[string]string
	// Links are the span ids the span links to, with their traces.
	Links []Link
	// Error is set when the span's status is an error.
	Error bool
}

// Link is a span link.
type Link struct {
	TraceID, SpanID string
}

// Receiver is an OTLP/HTTP trace receiver on loopback.
type Receiver struct {
	// Endpoint is the receiver's base URL, the value of
	// OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string

	mu    sync.Mutex
	spans []Span
}

// NewReceiver starts a receiver that stops when the test ends. A request
// it cannot decode fails the test.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != TracesPath {
			http.Error(w, "only POST "+TracesPath, http.StatusNotFound)
			return
		}
		spans, err := decode(req)
		if err != nil {
			t.Errorf("otlptest: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.spans = append(r.spans, spans...)
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.Endpoint = srv.URL
	return r
}

func decode(req *http.Request) ([]Span, error) {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return nil, fmt.Errorf("content type %q; OTLP/HTTP sends application/x-protobuf", ct)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	var export collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &export); err != nil {
		return nil, fmt.Errorf("decode ExportTraceServiceRequest: %w", err)
	}
	var spans []Span
	for _, rs := range export.GetResourceSpans() {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				span := Span{
					Service:      service,
					Name:         s.GetName(),
					TraceID:      hex.EncodeToString(s.GetTraceId()),
					SpanID:       hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
					Start:        time.Unix(0, int64(s.GetStartTimeUnixNano())),
					End:          time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attributes:   attributes(s.GetAttributes()),
					Error:        s.GetStatus().GetCode() == 2, // STATUS_CODE_ERROR
				}
				for _, l := range s.GetLinks() {
					span.Links = append(span.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				spans = append(spans, span)
			}
		}
	}
	return spans, nil
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.GetStringValue()
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetBoolValue())
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetDoubleValue())
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Spans returns every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// WaitFor waits until a received span satisfies match and returns it;
// it fails the test after within.
func (r *Receiver) WaitFor(t testing.TB, within time.Duration, what string, match func(Span) bool) Span {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, s := range r.Spans() {
			if match(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("otlptest: no span %s arrived within %s; received:\n%s", what, within, r.dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Trace returns the received spans of one trace.
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// Tree draws the spans of one trace as an indented tree, children under
// their parent in start order, each line the span's service, name and the
// attributes named in show. A span whose parent did not arrive (the
// producer's, say, exported elsewhere) is drawn at the top.
func (r *Receiver) Tree(traceID string, show ...string) string {
	spans := r.Trace(traceID)
	slices.SortFunc(spans, func(a, b Span) int { return a.Start.Compare(b.Start) })
	ids := make(map[string]bool, len(spans))
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	var b strings.Builder
	var draw func(parent string, depth int)
	draw = func(parent string, depth int) {
		for _, s := range spans {
			top := depth == 0 && !ids[s.ParentSpanID]
			if !(top || depth > 0 && s.ParentSpanID == parent) {
				continue
			}
			fmt.Fprintf(&b, "%s%s %s", strings.Repeat("  ", depth), s.Service, s.Name)
			for _, key := range show {
				if v, ok := s.Attributes[key]; ok {
					fmt.Fprintf(&b, " %s=%s", key, v)
				}
			}
			b.WriteString("\n")
			draw(s.SpanID, depth+1)
		}
	}
	draw("", 0)
	return b.String()
}

func (r *Receiver) dump() string {
	var b bytes.Buffer
	for _, s := range r.Spans() {
		fmt.Fprintf(&b, "  %s %s trace=%s span=%s parent=%s\n", s.Service, s.Name, s.TraceID, s.SpanID, s.ParentSpanID)
	}
	return b.String()
}
