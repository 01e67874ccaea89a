package delivery

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// HeaderSource turns an endpoint's stored custom headers (the headers
// column, migrations/0039_endpoint_headers_and_policy.sql) into the headers
// to send: values decrypted, and the names of the secret ones, whose values
// are masked in the attempt log. *store.Store implements it.
type HeaderSource interface {
	SendHeaders(endpointID uuid.UUID, stored []byte) (headers http.Header, secret []string, err error)
}

// maskedValue stands for a secret header's value in the attempt log, as
// store.MaskedHeaderValue does in the API.
const maskedValue = "********"

// endpointOptions are an endpoint's own headers, timeout and retry policy,
// as loaded with its delivery: zero durations mean the worker's defaults.
type endpointOptions struct {
	// headers is the stored headers column; "[]" or empty for none.
	headers                []byte
	timeout                time.Duration
	window, base, retryCap time.Duration
}

// hasHeaders reports whether the endpoint has custom headers.
func (o endpointOptions) hasHeaders() bool {
	return len(o.headers) > 0 && string(o.headers) != "[]"
}

// customHeaders returns the headers an attempt with options o sends for
// endpointID, and the names of the secret ones.
func (w *Worker) customHeaders(endpointID uuid.UUID, o endpointOptions) (http.Header, []string, error) {
	if !o.hasHeaders() {
		return nil, nil, nil
	}
	if w.headers == nil {
		return nil, nil, fmt.Errorf("the endpoint has custom headers, but the worker has no Config.Headers to read them with")
	}
	return w.headers.SendHeaders(endpointID, o.headers)
}

// timeoutFor is the request timeout of an attempt with options o: the
// endpoint's own, clamped to the bounds, or the worker's.
func (w *Worker) timeoutFor(o endpointOptions) time.Duration {
	return w.bounds.Timeout(w.timeout, o.timeout)
}

// loadOptions reads endpointID's options, for a Probe.
func (w *Worker) loadOptions(ctx context.Context, endpointID uuid.UUID) (endpointOptions, error) {
	var (
		o                       endpointOptions
		timeoutMS               *int32
		windowMS, baseMS, capMS *int64
	)
	if err := w.db.QueryRow(ctx, selectEndpointOptions, endpointID).Scan(&o.headers, &timeoutMS, &windowMS, &baseMS, &capMS); err != nil {
		return o, fmt.Errorf("read the options of endpoint %s: %w", endpointID, err)
	}
	o.setDurations(timeoutMS, windowMS, baseMS, capMS)
	return o, nil
}

// setDurations sets o's durations from their columns (milliseconds, NULL
// for the default).
func (o *endpointOptions) setDurations(timeoutMS *int32, windowMS, baseMS, capMS *int64) {
	ms := func(v *int64) time.Duration {
		if v == nil {
			return 0
		}
		return time.Duration(*v) * time.Millisecond
	}
	o.timeout = 0
	if timeoutMS != nil {
		o.timeout = time.Duration(*timeoutMS) * time.Millisecond
	}
	o.window, o.base, o.retryCap = ms(windowMS), ms(baseMS), ms(capMS)
}
