package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// The three Standard Webhooks headers, lower case as the spec writes them
// (http.Header canonicalizes them on Set and Get).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// MaxSignatures is the largest number of entries ParseSignatureHeader
// accepts in one webhook-signature header. A rotation needs two or three;
// the limit keeps a hostile header from costing thousands of ed25519
// verifications.
const MaxSignatures = 32

// Signature is one entry of a webhook-signature header.
type Signature struct {
	// Algorithm is HMACSHA256 for a "v1" entry and Ed25519 for "v1a".
	Algorithm Algorithm
	// Value is the raw signature: 32 bytes for HMAC-SHA256, 64 for ed25519.
	Value []byte
}

// String returns the entry as it appears in the header: "v1,<base64>" or
// "v1a,<base64>".
func (s Signature) String() string {
	return s.Algorithm.version() + "," + base64.StdEncoding.EncodeToString(s.Value)
}

// ParseSignatureHeader parses a webhook-signature value: entries of the form
// "version,base64" separated by spaces (tabs and repeated spaces are
// tolerated). Entries of a version other than v1 and v1a are skipped, so a
// sender may add future schemes; the result can therefore be empty.
//
// It fails, wrapping [ErrInvalidSignatureHeader], when the value has no
// entry, more than [MaxSignatures], an entry without a version or a value,
// or a v1/v1a entry whose value is not standard padded base64 of the
// signature's exact length.
func ParseSignatureHeader(value string) ([]Signature, error) {
	fields := strings.FieldsFunc(value, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("%w: no signatures; want space-separated v1,<base64> entries", ErrInvalidSignatureHeader)
	}
	if len(fields) > MaxSignatures {
		return nil, fmt.Errorf("%w: %d signatures, at most %d are accepted", ErrInvalidSignatureHeader, len(fields), MaxSignatures)
	}
	sigs := make([]Signature, 0, len(fields))
	for i, field := range fields {
		version, b64, ok := strings.Cut(field, ",")
		if !ok || version == "" || b64 == "" {
			return nil, fmt.Errorf("%w: entry %d is not of the form version,base64", ErrInvalidSignatureHeader, i+1)
		}
		var alg Algorithm
		var size int
		switch version {
		case "v1":
			alg, size = HMACSHA256, sha256.Size
		case "v1a":
			alg, size = Ed25519, ed25519.SignatureSize
		default:
			continue
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d (%s) is not standard padded base64 (%v)", ErrInvalidSignatureHeader, i+1, version, err)
		}
		if len(raw) != size {
			return nil, fmt.Errorf("%w: entry %d (%s) is %d bytes, want %d", ErrInvalidSignatureHeader, i+1, version, len(raw), size)
		}
		sigs = append(sigs, Signature{Algorithm: alg, Value: raw})
	}
	return sigs, nil
}
