package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/heraldhq/herald/signing"
)

// DefaultMaxBodyBytes is the largest request body accepted when
// VerifyConfig.MaxBodyBytes is zero: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// ErrBodyTooLarge is returned by Verify for a body over
// VerifyConfig.MaxBodyBytes; the middleware and the Handler answer 413.
var ErrBodyTooLarge = errors.New("webhook body too large")

// VerifyConfig says how webhook requests are verified, by Verify,
// VerifyMiddleware and a Handler: Standard Webhooks signatures over the raw
// body, checked in constant time, with a timestamp tolerance against
// replays.
type VerifyConfig struct {
	// Secrets are the endpoint's signing secrets (whsec_…, or whpk_… for
	// ed25519), from signing.ParseSecret. A request verifies when any of
	// its signatures matches any secret, so during a rotation list both
	// the old and the new one until the sender has switched. Required.
	Secrets []signing.Secret

	// Tolerance is how far webhook-timestamp may lie from the current time,
	// either way. Defaults to 5 minutes. Zero or negative means the
	// default.
	Tolerance time.Duration

	// MaxBodyBytes is the largest body read; a larger one is refused with
	// 413 before it is verified. Defaults to 1 MiB. Zero means the
	// default; negative is an error.
	MaxBodyBytes int64

	// Now returns the current time for the tolerance check. Defaults to
	// time.Now. Nil means the default.
	Now func() time.Time

	// Logger gets one line for each rejected request, with the reason the
	// 400 response withholds from a possible forger, and, in a Handler,
	// each failure to store an event. Defaults to slog.Default(). Nil
	// means the default. The function Verify logs nothing.
	Logger *slog.Logger
}

// requestVerifier is a checked VerifyConfig.
type requestVerifier struct {
	verifier signing.Verifier
	maxBody  int64
	logger   *slog.Logger
}

func newRequestVerifier(cfg VerifyConfig) (*requestVerifier, error) {
	if len(cfg.Secrets) == 0 {
		return nil, fmt.Errorf("%w: set VerifyConfig.Secrets to the endpoint's whsec_ secret (both, during a rotation)", signing.ErrNoSecrets)
	}
	for i, s := range cfg.Secrets {
		if s.Algorithm() == 0 {
			return nil, fmt.Errorf("%w: VerifyConfig.Secrets[%d] is the zero Secret; use signing.ParseSecret", signing.ErrInvalidSecret, i)
		}
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("VerifyConfig.MaxBodyBytes is %d; it must not be negative (zero means 1 MiB)", cfg.MaxBodyBytes)
	}
	rv := &requestVerifier{
		verifier: signing.Verifier{Secrets: cfg.Secrets, Tolerance: cfg.Tolerance, Now: cfg.Now},
		maxBody:  cfg.MaxBodyBytes,
		logger:   cfg.Logger,
	}
	if rv.maxBody == 0 {
		rv.maxBody = DefaultMaxBodyBytes
	}
	if rv.logger == nil {
		rv.logger = slog.Default()
	}
	return rv, nil
}

// Verify reads r's body, at most cfg.MaxBodyBytes of it, and checks its
// Standard Webhooks headers against it. It returns the raw body when the
// request is authentic; parse that, not a re-read of r.Body (which Verify
// has consumed). Use it in a handler of your own, such as one that applies
// effects in the request with Claim:
//
//   - errors.Is(err, ErrBodyTooLarge): answer 413;
//   - errors.Is(err, signing.ErrNoSecrets) or signing.ErrInvalidSecret:
//     cfg is wrong, a bug of the program;
//   - any other error: the request is forged, stale, malformed or cut
//     short; answer 400 without the error's text, which would tell a
//     forger what to fix. The errors wrap the sentinels of package signing.
func Verify(r *http.Request, cfg VerifyConfig) (body []byte, err error) {
	rv, err := newRequestVerifier(cfg)
	if err != nil {
		return nil, fmt.Errorf("verify webhook: %w", err)
	}
	return rv.verify(r)
}

// VerifyMiddleware returns middleware that lets only authentic webhook
// requests through to the next handler, with r.Body replaced by the
// verified body so it can be read as usual. Others get 413 (too large) or
// 400 with a body that gives no reason, and are logged with the reason. It
// fails when cfg is invalid (no secrets, a negative MaxBodyBytes).
func VerifyMiddleware(cfg VerifyConfig) (func(http.Handler) http.Handler, error) {
	rv, err := newRequestVerifier(cfg)
	if err != nil {
		return nil, fmt.Errorf("verify middleware: %w", err)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := rv.verify(r)
			if err != nil {
				rv.reject(w, r, err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r)
		})
	}, nil
}

func (rv *requestVerifier) verify(r *http.Request) ([]byte, error) {
	if r.ContentLength > rv.maxBody {
		return nil, fmt.Errorf("%w: Content-Length %d, limit %d", ErrBodyTooLarge, r.ContentLength, rv.maxBody)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, rv.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read webhook body: %w", err)
	}
	if int64(len(body)) > rv.maxBody {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, rv.maxBody)
	}
	if err := rv.verifier.Verify(r.Header, body); err != nil {
		return nil, err
	}
	return body, nil
}

// reject answers a request that failed verify. The response names no
// reason; the log does.
func (rv *requestVerifier) reject(w http.ResponseWriter, r *http.Request, err error) {
	rv.logger.WarnContext(r.Context(), "webhook rejected", "error", err,
		"webhook_id", r.Header.Get(signing.HeaderID), "remote_addr", r.RemoteAddr, "path", r.URL.Path)
	if errors.Is(err, ErrBodyTooLarge) {
		http.Error(w, fmt.Sprintf("webhook body larger than %d bytes", rv.maxBody), http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "webhook verification failed", http.StatusBadRequest)
}
