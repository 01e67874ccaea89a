package signing

import "errors"

// Errors returned by this package. Each returned error wraps exactly one of
// these and adds a message naming the problem; test with errors.Is.
var (
	// ErrInvalidSecret means a secret could not be parsed or generated, or
	// cannot do what was asked of it (a whpk_ public key cannot sign).
	ErrInvalidSecret = errors.New("invalid webhook secret")

	// ErrNoSecrets means Sign or a Verifier was given no secret at all.
	ErrNoSecrets = errors.New("no webhook secrets configured")

	// ErrMissingHeader means webhook-id, webhook-timestamp or
	// webhook-signature is absent or empty.
	ErrMissingHeader = errors.New("missing webhook header")

	// ErrInvalidMessageID means the webhook-id contains a "." (which would
	// make the signed content ambiguous) or is otherwise unusable.
	ErrInvalidMessageID = errors.New("invalid webhook-id")

	// ErrInvalidTimestamp means webhook-timestamp is not a non-negative
	// integer count of unix seconds.
	ErrInvalidTimestamp = errors.New("invalid webhook-timestamp")

	// ErrTimestampTooOld means webhook-timestamp lies further in the past
	// than the verifier's tolerance: a replayed or long-delayed request.
	ErrTimestampTooOld = errors.New("webhook-timestamp too old")

	// ErrTimestampTooNew means webhook-timestamp lies further in the future
	// than the verifier's tolerance: usually a sender with a wrong clock.
	ErrTimestampTooNew = errors.New("webhook-timestamp too new")

	// ErrInvalidSignatureHeader means webhook-signature is not a
	// space-separated list of "version,base64" entries.
	ErrInvalidSignatureHeader = errors.New("invalid webhook-signature")

	// ErrNoMatchingSignature means no signature in the header verifies with
	// any candidate secret: a wrong secret, or a tampered body, ID or
	// timestamp.
	ErrNoMatchingSignature = errors.New("no matching webhook signature")
)
