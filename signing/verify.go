package signing

import (
	"crypto/ed25519"
	"crypto/hmac"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far webhook-timestamp may lie from the verifier's
// clock, in either direction, when Verifier.Tolerance is zero.
const DefaultTolerance = 5 * time.Minute

// Verifier checks webhook requests. The zero value is not usable: it needs
// at least one secret. A Verifier is safe for concurrent use as long as its
// fields are not changed.
type Verifier struct {
	// Secrets are the candidate keys; a request verifies if any signature
	// in its header matches any of them. List the old and the new secret
	// during a rotation. whsec_ secrets check v1 entries; whpk_ (or whsk_)
	// keys check v1a entries. Required.
	Secrets []Secret

	// Tolerance is how far webhook-timestamp may be from Now, in the past or
	// in the future, before the request is rejected as too old or too new.
	// Defaults to 5 minutes ([DefaultTolerance]). Zero or negative means
	// the default.
	Tolerance time.Duration

	// Now returns the current time. Defaults to time.Now; nil means the
	// default. Tests set it to a fixed clock.
	Now func() time.Time
}

// Verify checks a request's webhook headers against body, which must be the
// raw request body exactly as received (not re-encoded JSON). Several
// webhook-signature header lines are read as one list.
//
// It returns nil when a signature matches, or an error wrapping one of:
// [ErrNoSecrets] or [ErrInvalidSecret] (the Verifier is misconfigured),
// [ErrMissingHeader], [ErrInvalidMessageID], [ErrInvalidTimestamp],
// [ErrInvalidSignatureHeader], [ErrTimestampTooOld], [ErrTimestampTooNew],
// [ErrNoMatchingSignature]; in that order of checking.
func (v Verifier) Verify(h http.Header, body []byte) error {
	return v.VerifyValues(h.Get(HeaderID), h.Get(HeaderTimestamp), strings.Join(h.Values(HeaderSignature), " "), body)
}

// VerifyValues is [Verifier.Verify] for header values obtained elsewhere:
// the webhook-id, webhook-timestamp and webhook-signature values and the
// raw body. An empty value counts as a missing header.
func (v Verifier) VerifyValues(id, timestamp, signature string, body []byte) error {
	if err := v.checkSecrets(); err != nil {
		return err
	}
	if err := checkPresent(id, timestamp, signature); err != nil {
		return err
	}
	if err := checkMessageID(id); err != nil {
		return err
	}
	unix, err := parseTimestamp(timestamp)
	if err != nil {
		return err
	}
	sigs, err := ParseSignatureHeader(signature)
	if err != nil {
		return err
	}
	if err := v.checkTimestamp(time.Unix(unix, 0)); err != nil {
		return err
	}
	return v.match(signedContent(id, unix, body), sigs)
}

func (v Verifier) checkSecrets() error {
	if len(v.Secrets) == 0 {
		return fmt.Errorf("verify: %w: set Verifier.Secrets to the endpoint's whsec_ or whpk_ keys", ErrNoSecrets)
	}
	for i, s := range v.Secrets {
		if s.kind == kindNone {
			return fmt.Errorf("verify: %w: Verifier.Secrets[%d] is the zero Secret; use ParseSecret", ErrInvalidSecret, i)
		}
	}
	return nil
}

func checkPresent(id, timestamp, signature string) error {
	var missing []string
	for _, h := range []struct{ name, value string }{
		{HeaderID, id},
		{HeaderTimestamp, timestamp},
		{HeaderSignature, signature},
	} {
		if h.value == "" {
			missing = append(missing, h.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrMissingHeader, strings.Join(missing, ", "))
	}
	return nil
}

// parseTimestamp accepts only the canonical decimal form of non-negative
// unix seconds: no sign, no leading zeros, no fraction. Anything else could
// be signed in one spelling and checked in another.
func parseTimestamp(s string) (int64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %q is not unix seconds (digits only)", ErrInvalidTimestamp, s)
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%w: %q has leading zeros", ErrInvalidTimestamp, s)
	}
	unix, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is out of range", ErrInvalidTimestamp, s)
	}
	return unix, nil
}

func (v Verifier) checkTimestamp(ts time.Time) error {
	tolerance := v.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	current := now()
	switch {
	case current.Sub(ts) > tolerance:
		return fmt.Errorf("%w: %s is %s before now (%s), tolerance is %s",
			ErrTimestampTooOld, ts.UTC().Format(time.RFC3339), current.Sub(ts).Truncate(time.Second), current.UTC().Format(time.RFC3339), tolerance)
	case ts.Sub(current) > tolerance:
		return fmt.Errorf("%w: %s is %s after now (%s), tolerance is %s; is the sender's clock right?",
			ErrTimestampTooNew, ts.UTC().Format(time.RFC3339), ts.Sub(current).Truncate(time.Second), current.UTC().Format(time.RFC3339), tolerance)
	}
	return nil
}

// match reports whether any signature verifies under any secret. HMAC
// values are compared in constant time.
func (v Verifier) match(content []byte, sigs []Signature) error {
	var hmacSigs, edSigs, hmacKeys, edKeys int
	for _, sig := range sigs {
		if sig.Algorithm == HMACSHA256 {
			hmacSigs++
		} else {
			edSigs++
		}
	}
	for _, secret := range v.Secrets {
		switch secret.Algorithm() {
		case HMACSHA256:
			hmacKeys++
			if hmacSigs == 0 {
				continue
			}
			expected := hmacSHA256(secret.key, content)
			for _, sig := range sigs {
				if sig.Algorithm == HMACSHA256 && hmac.Equal(sig.Value, expected) {
					return nil
				}
			}
		case Ed25519:
			edKeys++
			pub := secret.ed25519PublicKey()
			for _, sig := range sigs {
				if sig.Algorithm == Ed25519 && ed25519.Verify(pub, content, sig.Value) {
					return nil
				}
			}
		}
	}
	switch {
	case hmacSigs+edSigs == 0:
		return fmt.Errorf("%w: the header has no v1 or v1a entry, the only versions this verifier knows", ErrNoMatchingSignature)
	case hmacSigs > 0 && hmacKeys == 0 && edSigs == 0:
		return fmt.Errorf("%w: the header has only v1 (HMAC) signatures but no whsec_ secret is configured", ErrNoMatchingSignature)
	case edSigs > 0 && edKeys == 0 && hmacSigs == 0:
		return fmt.Errorf("%w: the header has only v1a (ed25519) signatures but no whpk_ key is configured", ErrNoMatchingSignature)
	}
	return fmt.Errorf("%w: %d v1 and %d v1a signatures checked against %d secrets; wrong secret, or the body, ID or timestamp changed after signing",
		ErrNoMatchingSignature, hmacSigs, edSigs, len(v.Secrets))
}
