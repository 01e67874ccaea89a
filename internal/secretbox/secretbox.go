// Package secretbox encrypts small secrets at rest (endpoint signing
// secrets) with AES-256-GCM under an operator key, so a database dump alone
// does not reveal them.
//
// The operator key is 32 random bytes, given in HERALD_SECRET_KEY as
// standard base64 (44 characters, e.g. from `openssl rand -base64 32`) or as
// hex (64 characters). [Generate] makes one for development.
//
// A sealed value is
//
//	key id (4 bytes) || nonce (12 bytes) || AES-256-GCM ciphertext and tag
//
// The key id is the start of a SHA-256 of the key: it reveals nothing usable
// about the key, and it lets Open tell "sealed under another key" (the
// operator changed HERALD_SECRET_KEY) from "altered or moved". Callers pass
// additional data that binds a value to its place (Herald uses the endpoint
// id), so a ciphertext copied to another row does not open.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// EnvKey is the environment variable Herald's programs read the operator
// key from; errors name it.
const EnvKey = "HERALD_SECRET_KEY"

// KeySize is the size of an operator key in bytes (AES-256).
const KeySize = 32

const (
	keyIDSize = 4
	nonceSize = 12
	overhead  = keyIDSize + nonceSize + 16 // 16: the GCM tag
)

// ErrWrongKey means a value was sealed under a different operator key than
// the box holds.
var ErrWrongKey = errors.New("sealed under a different secret key")

// ErrCorrupt means a value is truncated, was altered, or was sealed with
// different additional data (for example copied to another record).
var ErrCorrupt = errors.New("sealed value is corrupt or belongs to another record")

// Box seals and opens values under one operator key. It is safe for
// concurrent use. Formatting or logging a Box prints its key id only.
type Box struct {
	aead cipher.AEAD
	id   [keyIDSize]byte
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret key is %d bytes; it must be %d random bytes (%s)", len(key), KeySize, howToGenerate)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	b := &Box{aead: aead}
	sum := sha256.Sum256(append([]byte("herald secretbox key id\x00"), key...))
	copy(b.id[:], sum[:])
	return b, nil
}

const howToGenerate = "generate one with: openssl rand -base64 32"

// Parse returns a Box for a key written as standard base64 (padded or not)
// or as hex. Surrounding white space is ignored. Errors never echo the key.
func Parse(encoded string) (*Box, error) {
	s := strings.TrimSpace(encoded)
	if s == "" {
		return nil, fmt.Errorf("%s is empty; set it to %d random bytes in base64 (%s)", EnvKey, KeySize, howToGenerate)
	}
	if len(s) == 2*KeySize {
		if key, err := hex.DecodeString(s); err == nil {
			return New(key)
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil && len(key) == KeySize {
			return New(key)
		}
	}
	return nil, fmt.Errorf("%s is not %d bytes in base64 (44 characters) or hex (64 characters); it has %d characters (%s)",
		EnvKey, KeySize, len(s), howToGenerate)
}

// Generate returns a new random key in standard base64, ready for
// HERALD_SECRET_KEY. Development setups use it; production keys belong in a
// secret manager.
func Generate() string {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails; it crashes the program instead.
	return base64.StdEncoding.EncodeToString(key)
}

// KeyID identifies the box's key in logs: 8 hex digits, not secret.
func (b *Box) KeyID() string {
	return hex.EncodeToString(b.id[:])
}

// Seal encrypts plaintext bound to additionalData, which Open must be given
// again.
func (b *Box) Seal(plaintext, additionalData []byte) []byte {
	out := make([]byte, keyIDSize+nonceSize, overhead+len(plaintext))
	copy(out, b.id[:])
	_, _ = rand.Read(out[keyIDSize:])
	return b.aead.Seal(out, out[keyIDSize:keyIDSize+nonceSize], plaintext, additionalData)
}

// Open decrypts a value made by Seal with the same additionalData. It fails
// with an error wrapping ErrWrongKey when the value was sealed under another
// key, and ErrCorrupt when it was altered, truncated or sealed with other
// additional data.
func (b *Box) Open(sealed, additionalData []byte) ([]byte, error) {
	if len(sealed) < overhead {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the %d-byte minimum", ErrCorrupt, len(sealed), overhead)
	}
	if id := sealed[:keyIDSize]; string(id) != string(b.id[:]) {
		return nil, fmt.Errorf("%w: the value was sealed under key id %x but %s holds key id %s; restore the key it was written with",
			ErrWrongKey, id, EnvKey, b.KeyID())
	}
	nonce := sealed[keyIDSize : keyIDSize+nonceSize]
	plaintext, err := b.aead.Open(nil, nonce, sealed[keyIDSize+nonceSize:], additionalData)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed", ErrCorrupt)
	}
	return plaintext, nil
}

// String describes the box by its key id.
func (b *Box) String() string {
	return "secretbox(key id " + b.KeyID() + ")"
}

// GoString keeps %#v from printing the cipher's key schedule.
func (b *Box) GoString() string {
	return b.String()
}

// LogValue keeps log/slog from printing the cipher's key schedule.
func (b *Box) LogValue() slog.Value {
	return slog.StringValue(b.String())
}
