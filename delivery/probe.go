package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ProbeResult is how an endpoint answered a Probe.
type ProbeResult struct {
	StartedAt time.Time
	Duration  time.Duration
	// StatusCode is the answer's status; 0 when none came (see Err).
	StatusCode int
	// Excerpt is the start of the answer's body, made storable
	// (MaxResponseStored at most).
	Excerpt string
	// Err is why no answer came (a timeout, a refused connection, the
	// SSRF guard), or a *Fault when the failure was Herald's and nothing
	// was sent.
	Err error
}

// Probe sends body to url as an attempt of message messageID would be
// sent, and records nothing: signed for this moment with every secret of
// the endpoint active now (read afresh, not from the worker's cache),
// with its authentication and mutual TLS and custom headers (read afresh
// too), with webhook-id MessageHeaderID(messageID), through the worker's
// transport (the SSRF guard), the endpoint's timeout and the worker's user
// agent, never following a
// redirect. The receiver check (package receivercheck) sends its events
// through it, so that they reach the endpoint exactly as deliveries do.
func (w *Worker) Probe(ctx context.Context, endpointID uuid.UUID, url string, messageID uuid.UUID, body []byte) ProbeResult {
	secrets, secretsErr := w.secrets.source.ActiveSecrets(ctx, endpointID, w.now())
	options, err := w.loadOptions(ctx, endpointID)
	if err != nil {
		return ProbeResult{StartedAt: w.now(), Err: &Fault{Cause: FaultSecrets, Err: fmt.Errorf("not sent, %w", err)}}
	}
	via, viaErr := w.endpoints.read(ctx, endpointID, w.now())
	a := w.post(ctx, outgoing{target: url, messageID: messageID, body: body, secrets: secrets, secretsErr: secretsErr,
		via: via, viaErr: viaErr, endpointID: endpointID, options: options})
	return ProbeResult{StartedAt: a.startedAt, Duration: a.duration, StatusCode: a.result.StatusCode, Excerpt: a.excerpt, Err: a.result.Err}
}
