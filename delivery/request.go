package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/sanitize"
	"github.com/heraldhq/herald/internal/ssrf"
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
	// secrets (a secret custom header's value is masked), and are stored
	// on the attempt.
	headers map[string]string
	result  Result
	excerpt string
	// job is the span context of the River job that made the attempt
	// (otelriver's work span), which the attempt's span links to.
	job trace.SpanContext
}

// MessageHeaderID returns the webhook-id of a message: "msg_" and its id.
// It is the same on every attempt, resend and replay of the message.
func MessageHeaderID(messageID uuid.UUID) string {
	return "msg_" + messageID.String()
}

// send makes one attempt of d: it signs the body for this moment with every
// active secret of the endpoint and POSTs it, giving up after the timeout.
// It never returns an error: what went wrong is part of the attempt, and
// a *Fault when it was on Herald's side (the secrets, signing, the
// resolver), in which case nothing was sent.
func (w *Worker) send(ctx context.Context, d loaded) attempt {
	// The secrets come from Herald's database: reading them is not the
	// endpoint's time, so the attempt's clock and timeout start after it.
	// Otherwise a slow database would use up the endpoint's timeout and
	// record a timeout against it, for a request that maybe never left.
	secrets, secretsErr := w.secrets.secretsFor(ctx, d, w.now())
	via, viaErr := w.endpoints.forAttempt(ctx, d.endpointID, d.credentials, w.now())
	return w.post(ctx, outgoing{target: d.url, messageID: d.messageID, body: d.body, secrets: secrets, secretsErr: secretsErr,
		via: via, viaErr: viaErr, endpointID: d.endpointID, options: d.options})
}

// outgoing is what post sends, and what with.
type outgoing struct {
	target    string
	messageID uuid.UUID
	body      []byte
	// secrets sign the body; when secretsErr is set, nothing is sent.
	secrets    []signing.Secret
	secretsErr error
	// via is the endpoint's client, with its authentication and mutual
	// TLS; when viaErr is set, nothing is sent.
	via    *endpointClient
	viaErr error
	// endpointID and options give the endpoint's custom headers and
	// timeout.
	endpointID uuid.UUID
	options    endpointOptions
}

// post signs o's body as its message's with its secrets and POSTs it to
// its target through o's client, with its Authorization and the
// endpoint's custom headers, within the endpoint's timeout; when a
// secret, a credential, a custom header or a token is missing it sends
// nothing and says why. An OAuth2 endpoint that answers 401 gets the
// request once more with a fresh token, within the same timeout; the
// second answer is the attempt's.
func (w *Worker) post(ctx context.Context, o outgoing) (a attempt) {
	a.startedAt = w.now()
	a.job = trace.SpanContextFromContext(ctx)
	defer func() { a.duration = w.now().Sub(a.startedAt) }()

	timeout := w.timeoutFor(o.options)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lookups lookupWatch
	ctx = httptrace.WithClientTrace(ctx, lookups.trace())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.target, bytes.NewReader(o.body))
	if err != nil {
		a.result.Err = fmt.Errorf("the endpoint URL cannot be requested (%v); fix the endpoint's URL", unwrapURLError(err))
		return a
	}
	custom, secretNames, err := w.customHeaders(o.endpointID, o.options)
	if err != nil {
		a.result.Err = &Fault{Cause: FaultSecrets, Err: fmt.Errorf("not sent, could not read the endpoint's custom headers: %w", err)}
		return a
	}
	// The store refuses custom headers Herald sets itself, so none of the
	// headers below overwrites one.
	for name, values := range custom {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.userAgent)
	if o.secretsErr != nil {
		a.result.Err = &Fault{Cause: FaultSecrets, Err: fmt.Errorf("not sent, could not read the endpoint's signing secrets: %w", o.secretsErr)}
		return a
	}
	if o.viaErr != nil {
		a.result.Err = &Fault{Cause: FaultCredentials, Err: fmt.Errorf("not sent, could not read the endpoint's authentication or mutual TLS settings: %w", o.viaErr)}
		return a
	}
	if err := signing.SignHeaders(req.Header, MessageHeaderID(o.messageID), a.startedAt, o.body, o.secrets...); err != nil {
		a.result.Err = &Fault{Cause: FaultSigning, Err: fmt.Errorf("not sent, could not sign: %w", err)}
		return a
	}
	// Without a token nothing is sent, and no headers are recorded.
	token, err := o.via.authorize(ctx, req.Header, nil)
	if err != nil {
		a.result.Err = w.describeError(err, &lookups, timeout)
		return a
	}
	a.headers = make(map[string]string, len(req.Header))
	for name := range req.Header {
		a.headers[strings.ToLower(name)] = sanitize.Text(req.Header.Get(name), MaxHeaderStored)
	}
	for _, name := range secretNames {
		a.headers[strings.ToLower(name)] = maskedValue
	}
	if o.via.auth != nil {
		a.headers["authorization"] = redactedAuthorization[o.via.auth.Type]
	}

	resp, err := o.via.client.Do(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && o.via.refreshesOn401() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseRead))
		resp.Body.Close()
		again := req.Clone(ctx)
		again.Body, _ = req.GetBody()
		if _, err := o.via.authorize(ctx, again.Header, token); err != nil {
			a.result.Err = w.describeError(err, &lookups, timeout)
			return a
		}
		resp, err = o.via.client.Do(again)
	}
	if err != nil {
		a.result.Err = w.describeError(err, &lookups, timeout)
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
// carry a token in its query. An error of Herald's resolver (see
// resolverFault) is a *Fault.
func (w *Worker) describeError(err error, lookups *lookupWatch, timeout time.Duration) error {
	err = unwrapURLError(err)
	if fault := lookups.resolverFault(err, timeout); fault != nil {
		return fault
	}
	if errors.Is(err, ssrf.ErrProxyUnavailable) {
		return &Fault{Cause: FaultProxy, Err: fmt.Errorf("not sent: %w", err)}
	}
	var (
		netErr   net.Error
		tokenErr *TokenError
	)
	timedOut := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
	switch {
	case timedOut && errors.As(err, &tokenErr):
		return &TokenError{TokenURL: tokenErr.TokenURL, Err: fmt.Errorf("timed out after %s", timeout)}
	case timedOut:
		return fmt.Errorf("timed out after %s", timeout)
	}
	return err
}

// servfail is the text of a *net.DNSError for a SERVFAIL answer (Go's
// resolver says "server misbehaving", and sets IsTemporary).
const servfail = "server misbehaving"

// resolverFailed reports whether a failed lookup is Herald's resolver's
// fault rather than the endpoint's: the resolver did not answer in time
// (IsTimeout), or could not be reached (a socket error, which Go's
// resolver marks IsTemporary). The endpoint's are a name that does not
// exist or has no address (IsNotFound), and the answers of a resolver
// that was reached but could not resolve the name: SERVFAIL (its name
// servers failed) and any other error code.
func resolverFailed(e *net.DNSError) bool {
	return !e.IsNotFound && (e.IsTimeout || e.IsTemporary && e.Err != servfail)
}

// lookupWatch follows the DNS lookups of one request
// (net/http/httptrace). A request that timed out while its lookup was
// still waiting for Herald's resolver fails with the request's own
// timeout, not a *net.DNSError: the watch tells it from an endpoint that
// did not answer.
type lookupWatch struct {
	mu      sync.Mutex
	running int           // lookups started and not done
	failed  *net.DNSError // the first lookup that failed on Herald's side
}

func (l *lookupWatch) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.running++
		},
		DNSDone: func(info httptrace.DNSDoneInfo) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.running--
			var e *net.DNSError
			if l.failed == nil && errors.As(info.Err, &e) && resolverFailed(e) {
				l.failed = e
			}
		},
	}
}

// resolverFault returns the Fault of a request that failed with err
// because Herald's resolver did not answer or could not be reached, and
// nil when the failure was not the resolver's (see resolverFailed).
// Nothing was sent: the lookup comes before connecting.
func (l *lookupWatch) resolverFault(err error, timeout time.Duration) *Fault {
	l.mu.Lock()
	defer l.mu.Unlock()
	var e *net.DNSError
	switch {
	case errors.As(err, &e) && resolverFailed(e):
	case l.failed != nil:
		e = l.failed
	case l.running > 0:
		return &Fault{Cause: FaultResolver, Err: fmt.Errorf("not sent, Herald's DNS resolver did not answer within the attempt's %s", timeout)}
	default:
		return nil
	}
	return &Fault{Cause: FaultResolver, Err: fmt.Errorf("not sent, Herald's DNS resolver did not answer: %w", e)}
}

func unwrapURLError(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}
