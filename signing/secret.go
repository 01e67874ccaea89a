package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
)

// Prefixes of the serialized secret forms.
const (
	HMACSecretPrefix        = "whsec_"
	Ed25519PrivateKeyPrefix = "whsk_"
	Ed25519PublicKeyPrefix  = "whpk_"
)

// Sizes of an HMAC secret's key in bytes. The spec requires at least 24
// bytes (192 bits) and at most 64 (512 bits).
const (
	MinHMACSecretSize     = 24
	MaxHMACSecretSize     = 64
	DefaultHMACSecretSize = 32
)

// Algorithm is a signature scheme of Standard Webhooks.
type Algorithm int

const (
	// HMACSHA256 is the symmetric scheme: whsec_ secrets, "v1" signatures.
	HMACSHA256 Algorithm = iota + 1
	// Ed25519 is the asymmetric scheme: whsk_/whpk_ keys, "v1a" signatures.
	Ed25519
)

// String returns "HMAC-SHA256" or "ed25519".
func (a Algorithm) String() string {
	switch a {
	case HMACSHA256:
		return "HMAC-SHA256"
	case Ed25519:
		return "ed25519"
	default:
		return fmt.Sprintf("Algorithm(%d)", int(a))
	}
}

// version is the signature identifier the algorithm's entries carry in the
// webhook-signature header.
func (a Algorithm) version() string {
	switch a {
	case HMACSHA256:
		return "v1"
	case Ed25519:
		return "v1a"
	default:
		return ""
	}
}

type secretKind uint8

const (
	kindNone secretKind = iota
	kindHMAC
	kindEd25519Private
	kindEd25519Public
)

// Secret is one key: an HMAC-SHA256 secret (whsec_), an ed25519 private key
// (whsk_) or an ed25519 public key (whpk_). Obtain one from [ParseSecret] or
// a Generate… function; the zero Secret holds no key and every operation on
// it fails with [ErrInvalidSecret].
//
// String returns the serialized key. Formatting a Secret with fmt (any verb,
// including %v, %s and %#v) or logging it with log/slog prints a redacted
// form such as "whsec_[REDACTED]"; public keys are not secret and print in
// full.
type Secret struct {
	kind secretKind
	// key is the HMAC key (24–64 bytes), the 64-byte ed25519 private key
	// (seed followed by public key) or the 32-byte ed25519 public key.
	key []byte
}

// ParseSecret parses a serialized secret:
//
//   - "whsec_" + base64 of a 24 to 64 byte HMAC key;
//   - "whsk_" + base64 of an ed25519 private key, either the 64-byte form
//     (seed followed by public key, as String writes it) or the bare 32-byte
//     seed;
//   - "whpk_" + base64 of a 32-byte ed25519 public key.
//
// Base64 is the standard alphabet with padding. Surrounding white space is
// ignored. A value without a prefix is read as an HMAC key, because the
// reference libraries accept whsec_ secrets with the prefix stripped;
// String always writes the prefix back.
//
// Errors wrap [ErrInvalidSecret] and say what is wrong without echoing key
// material.
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Secret{}, fmt.Errorf("%w: the secret is empty; want whsec_, whsk_ or whpk_ followed by base64", ErrInvalidSecret)
	case strings.HasPrefix(s, HMACSecretPrefix):
		return parseHMAC(s[len(HMACSecretPrefix):], HMACSecretPrefix)
	case strings.HasPrefix(s, Ed25519PrivateKeyPrefix):
		return parseEd25519Private(s[len(Ed25519PrivateKeyPrefix):])
	case strings.HasPrefix(s, Ed25519PublicKeyPrefix):
		return parseEd25519Public(s[len(Ed25519PublicKeyPrefix):])
	}
	// "_" is not in the standard base64 alphabet, so an underscore means an
	// unknown prefix rather than a bare key.
	if i := strings.IndexByte(s, '_'); i >= 0 {
		if i <= 8 {
			return Secret{}, fmt.Errorf("%w: unknown prefix %q; want whsec_ (HMAC), whsk_ (ed25519 private) or whpk_ (ed25519 public)", ErrInvalidSecret, s[:i+1])
		}
		return Secret{}, fmt.Errorf("%w: not a Standard Webhooks secret; want whsec_, whsk_ or whpk_ followed by base64", ErrInvalidSecret)
	}
	return parseHMAC(s, "")
}

func decodeKey(b64, prefix string) ([]byte, error) {
	what := "the secret"
	if prefix != "" {
		what = "the " + prefix + " secret"
	}
	if b64 == "" {
		return nil, fmt.Errorf("%w: %s has no key after its prefix", ErrInvalidSecret, what)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		// The decoder's message holds only an offset, never key bytes.
		return nil, fmt.Errorf("%w: %s is not standard padded base64 (%v)", ErrInvalidSecret, what, err)
	}
	return key, nil
}

func parseHMAC(b64, prefix string) (Secret, error) {
	key, err := decodeKey(b64, prefix)
	if err != nil {
		if prefix == "" {
			return Secret{}, fmt.Errorf("%w (a secret without prefix is read as an HMAC key; add whsec_, whsk_ or whpk_)", err)
		}
		return Secret{}, err
	}
	if len(key) < MinHMACSecretSize || len(key) > MaxHMACSecretSize {
		return Secret{}, fmt.Errorf("%w: HMAC key is %d bytes, want %d to %d", ErrInvalidSecret, len(key), MinHMACSecretSize, MaxHMACSecretSize)
	}
	return Secret{kind: kindHMAC, key: key}, nil
}

func parseEd25519Private(b64 string) (Secret, error) {
	key, err := decodeKey(b64, Ed25519PrivateKeyPrefix)
	if err != nil {
		return Secret{}, err
	}
	switch len(key) {
	case ed25519.SeedSize:
		return Secret{kind: kindEd25519Private, key: ed25519.NewKeyFromSeed(key)}, nil
	case ed25519.PrivateKeySize:
		derived := ed25519.NewKeyFromSeed(key[:ed25519.SeedSize])
		if !bytes.Equal(derived[ed25519.SeedSize:], key[ed25519.SeedSize:]) {
			return Secret{}, fmt.Errorf("%w: whsk_ key's last 32 bytes are not the public key of its first 32 (the seed); the key is corrupt", ErrInvalidSecret)
		}
		return Secret{kind: kindEd25519Private, key: derived}, nil
	default:
		return Secret{}, fmt.Errorf("%w: whsk_ key is %d bytes, want %d (seed and public key) or %d (seed)", ErrInvalidSecret, len(key), ed25519.PrivateKeySize, ed25519.SeedSize)
	}
}

func parseEd25519Public(b64 string) (Secret, error) {
	key, err := decodeKey(b64, Ed25519PublicKeyPrefix)
	if err != nil {
		return Secret{}, err
	}
	if len(key) != ed25519.PublicKeySize {
		return Secret{}, fmt.Errorf("%w: whpk_ key is %d bytes, want %d", ErrInvalidSecret, len(key), ed25519.PublicKeySize)
	}
	return Secret{kind: kindEd25519Public, key: key}, nil
}

// GenerateHMACSecret returns a new whsec_ secret of [DefaultHMACSecretSize]
// (32) random bytes.
func GenerateHMACSecret() (Secret, error) {
	return GenerateHMACSecretSize(DefaultHMACSecretSize)
}

// GenerateHMACSecretSize returns a new whsec_ secret of size random bytes,
// which must be between [MinHMACSecretSize] (24) and [MaxHMACSecretSize] (64).
func GenerateHMACSecretSize(size int) (Secret, error) {
	if size < MinHMACSecretSize || size > MaxHMACSecretSize {
		return Secret{}, fmt.Errorf("%w: cannot generate an HMAC key of %d bytes, want %d to %d", ErrInvalidSecret, size, MinHMACSecretSize, MaxHMACSecretSize)
	}
	key := make([]byte, size)
	if _, err := rand.Read(key); err != nil {
		return Secret{}, fmt.Errorf("generate HMAC secret: %w", err)
	}
	return Secret{kind: kindHMAC, key: key}, nil
}

// GenerateEd25519Secret returns a new ed25519 private key (whsk_). Hand its
// [Secret.Public] key (whpk_) to receivers.
func GenerateEd25519Secret() (Secret, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Secret{}, fmt.Errorf("generate ed25519 secret: %w", err)
	}
	return Secret{kind: kindEd25519Private, key: priv}, nil
}

// String returns the serialized secret: "whsec_", "whsk_" or "whpk_"
// followed by the standard padded base64 of the key (a whsk_ key is written
// in its 64-byte form). This is secret material for whsec_ and whsk_: store
// it encrypted and show it to its owner only. The zero Secret returns "".
func (s Secret) String() string {
	var prefix string
	switch s.kind {
	case kindHMAC:
		prefix = HMACSecretPrefix
	case kindEd25519Private:
		prefix = Ed25519PrivateKeyPrefix
	case kindEd25519Public:
		prefix = Ed25519PublicKeyPrefix
	default:
		return ""
	}
	return prefix + base64.StdEncoding.EncodeToString(s.key)
}

// Algorithm returns [HMACSHA256] for a whsec_ secret and [Ed25519] for a
// whsk_ or whpk_ key. The zero Secret returns 0.
func (s Secret) Algorithm() Algorithm {
	switch s.kind {
	case kindHMAC:
		return HMACSHA256
	case kindEd25519Private, kindEd25519Public:
		return Ed25519
	default:
		return 0
	}
}

// CanSign reports whether the secret can produce signatures: true for
// whsec_ and whsk_, false for a whpk_ public key and the zero Secret.
func (s Secret) CanSign() bool {
	return s.kind == kindHMAC || s.kind == kindEd25519Private
}

// Public returns the whpk_ public key of a whsk_ private key, or the key
// itself if it already is public. An HMAC secret has no public part: it is
// an error wrapping [ErrInvalidSecret].
func (s Secret) Public() (Secret, error) {
	switch s.kind {
	case kindEd25519Private, kindEd25519Public:
		return Secret{kind: kindEd25519Public, key: s.ed25519PublicKey()}, nil
	case kindHMAC:
		return Secret{}, fmt.Errorf("%w: a whsec_ HMAC secret has no public key; receivers need the secret itself", ErrInvalidSecret)
	default:
		return Secret{}, fmt.Errorf("%w: the zero Secret holds no key", ErrInvalidSecret)
	}
}

// ReceiverKey returns the key to hand to the receivers of this secret's
// signatures: the whsec_ secret itself (HMAC is symmetric), or the whpk_
// public key of a whsk_ key, whose private half stays with the sender. A
// whpk_ key returns itself; the zero Secret returns the zero Secret.
func (s Secret) ReceiverKey() Secret {
	if s.kind == kindEd25519Private {
		return Secret{kind: kindEd25519Public, key: s.ed25519PublicKey()}
	}
	return s
}

// ed25519PublicKey returns the public half of an ed25519 key, private or
// public; nil for other kinds.
func (s Secret) ed25519PublicKey() ed25519.PublicKey {
	switch s.kind {
	case kindEd25519Private:
		return ed25519.PrivateKey(s.key).Public().(ed25519.PublicKey)
	case kindEd25519Public:
		return s.key
	default:
		return nil
	}
}

// redacted is what fmt and slog print: the prefix without the key for
// secret material, the whole key for a public key.
func (s Secret) redacted() string {
	switch s.kind {
	case kindHMAC:
		return HMACSecretPrefix + "[REDACTED]"
	case kindEd25519Private:
		return Ed25519PrivateKeyPrefix + "[REDACTED]"
	case kindEd25519Public:
		return s.String()
	default:
		return "[no secret]"
	}
}

// Format implements fmt.Formatter so that every fmt verb, %v, %s, %q and
// %#v included, prints the redacted form. Call String for the key itself.
func (s Secret) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), s.redacted())
}

// LogValue implements slog.LogValuer so that logging a Secret records the
// redacted form.
func (s Secret) LogValue() slog.Value {
	return slog.StringValue(s.redacted())
}
