package signing

import (
	"crypto/ed25519"
	"crypto/hmac"
	"fmt"
	"math"
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
	if err := v.checkTimestamp(unix); err != nil {
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

// checkTimestamp compares unix seconds with the clock. It never turns unix
// into a time.Time first: time.Time counts seconds from the year 1, so
// time.Unix wraps round for the last 62135596800 seconds below the int64
// limit, and a maximal timestamp would read as a date in the distant past.
func (v Verifier) checkTimestamp(unix int64) error {
	tolerance := v.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	current := now()
	ahead := offset(unix, current)
	switch {
	case -ahead > tolerance:
		return fmt.Errorf("%w: %s is %s before now (%s), tolerance is %s",
			ErrTimestampTooOld, formatUnix(unix), describeOffset(-ahead), current.UTC().Format(time.RFC3339), tolerance)
	case ahead > tolerance:
		return fmt.Errorf("%w: %s is %s after now (%s), tolerance is %s; is the sender's clock right?",
			ErrTimestampTooNew, formatUnix(unix), describeOffset(ahead), current.UTC().Format(time.RFC3339), tolerance)
	}
	return nil
}

// maxOffset is the farthest apart checkTimestamp tells a timestamp and the
// clock: the largest time.Duration, about 292 years.
const maxOffset = time.Duration(math.MaxInt64)

// offset returns how far unix seconds (never negative, see parseTimestamp)
// lie after now, or before it when negative, saturated to ±maxOffset.
func offset(unix int64, now time.Time) time.Duration {
	// Whole seconds that fit in a Duration with room for now's fraction.
	const limit = int64(maxOffset/time.Second) - 1
	secs := now.Unix()
	if secs < 0 && unix > math.MaxInt64+secs {
		return maxOffset // unix-secs would overflow
	}
	switch diff := unix - secs; {
	case diff > limit:
		return maxOffset
	case diff < -limit:
		return -maxOffset
	default:
		return time.Duration(diff)*time.Second - time.Duration(now.Nanosecond())
	}
}

// lastRFC3339 is 9999-12-31T23:59:59Z, the last second RFC 3339 can write.
const lastRFC3339 = 253402300799

// formatUnix writes unix seconds as an RFC 3339 date where one exists, and
// as the number otherwise.
func formatUnix(unix int64) string {
	if unix > lastRFC3339 {
		return strconv.FormatInt(unix, 10)
	}
	return time.Unix(unix, 0).UTC().Format(time.RFC3339)
}

func describeOffset(d time.Duration) string {
	if d == maxOffset {
		return "more than 292 years"
	}
	return d.Truncate(time.Second).String()
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
