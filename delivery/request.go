package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/sanitize"
	"github.com/heraldhq/herald/signing"
)

// Limits on what Herald keeps of a response. Everything stored of it goes
// through sanitize.Text, which cuts longer text and marks the cut.
const (
	// MaxResponseRead is how much of a response body is read; the rest is
	// discarded with the connection.
	MaxResponseRead = 64 << 10
	// MaxResponseStored is how much of the body is stored on the attempt.
	MaxResponseStored = 4 << 10
	// MaxErrorStored bounds the error stored on an attempt and as its
	// delivery's last_error.
	MaxErrorStored = 2 << 10
	// MaxHeaderStored bounds each request header value stored on an
	// attempt.
	MaxHeaderStored = 4 << 10
)

// maxLocationStored bounds the redirect target quoted in an error.
const maxLocationStored = 512

// attempt is one HTTP request and what came back.
type attempt struct {
	startedAt time.Time
	duration  time.Duration
	// headers are the request headers sent. They hold signatures, never
	// secrets, and are stored on the attempt.
	headers map[string]string
	result  Result
	excerpt string
}

// MessageHeaderID returns the webhook-id of a message: "msg_" and its id.
// It is the same on every attempt, resend and replay of the message.
func MessageHeaderID(messageID uuid.UUID) string {
	return "msg_" + messageID.String()
}

// send makes one attempt of d: it signs the body for this moment with every
// active secret of the endpoint and POSTs it, giving up after the timeout.
// It never returns an error: what went wrong is part of the attempt, and
// a *Fault when it was on Herald's side (the secrets, signing), in which
// case nothing was sent.
func (w *Worker) send(ctx context.Context, d loaded) (a attempt) {
	// The secrets come from Herald's database: reading them is not the
	// endpoint's time, so the attempt's clock and timeout start after it.
	// Otherwise a slow database would use up the endpoint's timeout and
	// record a timeout against it, for a request that maybe never left.
	secrets, secretsErr := w.secrets.secretsFor(ctx, d, w.now())

	a.startedAt = w.now()
	defer func() { a.duration = w.now().Sub(a.startedAt) }()

	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		a.result.Err = fmt.Errorf("the endpoint URL cannot be requested (%v); fix the endpoint's URL", unwrapURLError(err))
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.userAgent)
	if secretsErr != nil {
		a.result.Err = &Fault{Cause: FaultSecrets, Err: fmt.Errorf("not sent, could not read the endpoint's signing secrets: %w", secretsErr)}
		return a
	}
	if err := signing.SignHeaders(req.Header, MessageHeaderID(d.messageID), a.startedAt, d.body, secrets...); err != nil {
		a.result.Err = &Fault{Cause: FaultSigning, Err: fmt.Errorf("not sent, could not sign: %w", err)}
		return a
	}
	a.headers = make(map[string]string, len(req.Header))
	for name := range req.Header {
		a.headers[strings.ToLower(name)] = sanitize.Text(req.Header.Get(name), MaxHeaderStored)
	}

	resp, err := w.client.Do(req)
	if err != nil {
		a.result.Err = w.describeError(err)
		return a
	}
	defer resp.Body.Close()
	// A body cut short by the timeout still leaves the status, which is
	// what the outcome depends on; keep what arrived.
	read, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseRead))
	a.result.StatusCode = resp.StatusCode
	a.result.RetryAfter = resp.Header.Get("Retry-After")
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		a.result.Location = sanitize.Text(resp.Header.Get("Location"), maxLocationStored)
	}
	a.excerpt = sanitize.Text(string(read), MaxResponseStored)
	return a
}

// describeError words a transport error without the request URL, which may
// carry a token in its query.
func (w *Worker) describeError(err error) error {
	err = unwrapURLError(err)
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return fmt.Errorf("timed out after %s", w.timeout)
	}
	return err
}

func unwrapURLError(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}
