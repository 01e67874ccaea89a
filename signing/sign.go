package signing

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sign returns the webhook-signature value for a message: one entry per
// secret, in the order given, separated by spaces — "v1,<base64>" for a
// whsec_ secret and "v1a,<base64>" for a whsk_ key. Pass the current and the
// previous secret during a rotation so receivers holding either verify.
//
// The signed content is msgID + "." + unix seconds of ts + "." + body.
// msgID must be non-empty and contain no "." (which would make that content
// ambiguous), no white space and no control characters (which cannot
// travel unchanged in a header); ts must not be before 1970. Between 1 and
// [MaxSignatures] secrets are required and each must be able to sign (not a
// whpk_ public key).
func Sign(msgID string, ts time.Time, body []byte, secrets ...Secret) (string, error) {
	if err := checkOutgoingMessageID(msgID); err != nil {
		return "", err
	}
	unix := ts.Unix()
	if unix < 0 {
		return "", fmt.Errorf("%w: %s is before 1970; unix seconds cannot be negative", ErrInvalidTimestamp, ts.UTC().Format(time.RFC3339))
	}
	if len(secrets) == 0 {
		return "", fmt.Errorf("sign message %s: %w", msgID, ErrNoSecrets)
	}
	if len(secrets) > MaxSignatures {
		return "", fmt.Errorf("sign message %s: %w: %d secrets, receivers accept at most %d signatures", msgID, ErrInvalidSecret, len(secrets), MaxSignatures)
	}
	content := signedContent(msgID, unix, body)
	entries := make([]string, len(secrets))
	for i, secret := range secrets {
		sig, err := secret.sign(content)
		if err != nil {
			return "", fmt.Errorf("sign message %s with secret %d: %w", msgID, i+1, err)
		}
		entries[i] = sig.String()
	}
	return strings.Join(entries, " "), nil
}

// SignHeaders signs a message like [Sign] and sets webhook-id,
// webhook-timestamp and webhook-signature on h, replacing earlier values.
// On error h is left unchanged.
func SignHeaders(h http.Header, msgID string, ts time.Time, body []byte, secrets ...Secret) error {
	if h == nil {
		return errors.New("sign headers: the http.Header is nil; pass a made map such as req.Header")
	}
	sig, err := Sign(msgID, ts, body, secrets...)
	if err != nil {
		return err
	}
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}

// signedContent is the byte string both schemes sign: "id.timestamp.body".
func signedContent(msgID string, unix int64, body []byte) []byte {
	content := make([]byte, 0, len(msgID)+1+20+1+len(body))
	content = append(content, msgID...)
	content = append(content, '.')
	content = strconv.AppendInt(content, unix, 10)
	content = append(content, '.')
	return append(content, body...)
}

func (s Secret) sign(content []byte) (Signature, error) {
	switch s.kind {
	case kindHMAC:
		return Signature{Algorithm: HMACSHA256, Value: hmacSHA256(s.key, content)}, nil
	case kindEd25519Private:
		return Signature{Algorithm: Ed25519, Value: ed25519.Sign(s.key, content)}, nil
	case kindEd25519Public:
		return Signature{}, fmt.Errorf("%w: a whpk_ public key cannot sign; sign with its whsk_ private key", ErrInvalidSecret)
	default:
		return Signature{}, fmt.Errorf("%w: the zero Secret holds no key; use ParseSecret or a Generate function", ErrInvalidSecret)
	}
}

func hmacSHA256(key, content []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(content)
	return mac.Sum(nil)
}

// checkMessageID rejects what no webhook-id may be, sent or received.
func checkMessageID(msgID string) error {
	if msgID == "" {
		return fmt.Errorf("%w: the message ID is empty", ErrInvalidMessageID)
	}
	if strings.Contains(msgID, ".") {
		return fmt.Errorf("%w: %q contains \".\", which would make the signed content id.timestamp.body ambiguous", ErrInvalidMessageID, msgID)
	}
	return nil
}

// checkOutgoingMessageID also rejects bytes that a header value cannot
// carry unchanged: control characters, and spaces, which receivers trim.
func checkOutgoingMessageID(msgID string) error {
	if err := checkMessageID(msgID); err != nil {
		return err
	}
	for i := 0; i < len(msgID); i++ {
		if c := msgID[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("%w: %q contains white space or a control character at byte %d", ErrInvalidMessageID, msgID, i)
		}
	}
	return nil
}
