package signing

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Key material of the spec's test vector and of RFC 8032's first ed25519
// test (its seed 9d61b1…7f60 and public key d75a98…511a), serialized by an
// independent implementation (Python's cryptography package).
const (
	specSecret       = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rfcPrivateKey    = "whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2DXWpgBgrEKt9VL/tPJZAc6DuFy89qmIyWvAhpo9wdRGg=="
	rfcPrivateSeed   = "whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A="
	rfcPublicKey     = "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
	rfcPublicKeyHex  = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	hmacSecretBase64 = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

func mustParse(t testing.TB, s string) Secret {
	t.Helper()
	secret, err := ParseSecret(s)
	require.NoError(t, err, "ParseSecret")
	return secret
}

func b64(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }

func TestParseSecret(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		in        string
		want      string // canonical String()
		algorithm Algorithm
		canSign   bool
	}{
		{"whsec from the spec", specSecret, specSecret, HMACSHA256, true},
		{"whsec without prefix, as the reference libraries accept", hmacSecretBase64, specSecret, HMACSHA256, true},
		{"surrounding white space", "  " + specSecret + "\n", specSecret, HMACSHA256, true},
		{"whsec of 24 bytes", "whsec_" + b64(24), "whsec_" + b64(24), HMACSHA256, true},
		{"whsec of 64 bytes", "whsec_" + b64(64), "whsec_" + b64(64), HMACSHA256, true},
		{"whsk 64-byte form", rfcPrivateKey, rfcPrivateKey, Ed25519, true},
		{"whsk 32-byte seed is expanded", rfcPrivateSeed, rfcPrivateKey, Ed25519, true},
		{"whpk", rfcPublicKey, rfcPublicKey, Ed25519, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secret, err := ParseSecret(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, secret.String())
			require.Equal(t, tt.algorithm, secret.Algorithm())
			require.Equal(t, tt.canSign, secret.CanSign())

			again, err := ParseSecret(secret.String())
			require.NoError(t, err, "String must parse back")
			require.Equal(t, secret.String(), again.String())
		})
	}
}

func TestParseSecretErrors(t *testing.T) {
	t.Parallel()

	rfcPriv, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(rfcPrivateKey, "whsk_"))
	require.NoError(t, err)
	corrupt := bytes.Clone(rfcPriv)
	corrupt[63] ^= 1

	tests := []struct {
		name    string
		in      string
		wantMsg string
	}{
		{"empty", "", "the secret is empty"},
		{"only spaces", "   ", "the secret is empty"},
		{"prefix only", "whsec_", "has no key after its prefix"},
		{"whsec not base64", "whsec_not*base64!", "not standard padded base64"},
		{"whsec unpadded", "whsec_" + strings.TrimRight(b64(32), "="), "not standard padded base64"},
		{"whsec url alphabet", "whsec_-_-_" + b64(24), "not standard padded base64"},
		{"whsec too short", "whsec_" + b64(23), "HMAC key is 23 bytes, want 24 to 64"},
		{"whsec too long", "whsec_" + b64(65), "HMAC key is 65 bytes, want 24 to 64"},
		{"bare too short", b64(16), "HMAC key is 16 bytes"},
		{"bare not base64", "hello world!", "without prefix is read as an HMAC key"},
		{"unknown prefix", "whk_" + b64(32), `unknown prefix "whk_"`},
		{"uppercase prefix", "WHSEC_" + b64(32), `unknown prefix "WHSEC_"`},
		{"underscore far in", "abcdefghijklmnop_" + b64(32), "not a Standard Webhooks secret"},
		{"whsk wrong size", "whsk_" + b64(48), "whsk_ key is 48 bytes, want 64 (seed and public key) or 32 (seed)"},
		{"whsk public half mismatch", "whsk_" + base64.StdEncoding.EncodeToString(corrupt), "not the public key of its first 32"},
		{"whpk wrong size", "whpk_" + b64(31), "whpk_ key is 31 bytes, want 32"},
		{"whpk not base64", "whpk_???", "the whpk_ secret is not standard padded base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secret, err := ParseSecret(tt.in)
			require.ErrorIs(t, err, ErrInvalidSecret)
			require.ErrorContains(t, err, tt.wantMsg)
			require.Equal(t, "", secret.String(), "a failed parse returns the zero Secret")
		})
	}
}

func TestParseSecretErrorsDoNotEchoKeyMaterial(t *testing.T) {
	t.Parallel()

	key := "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5"
	for _, in := range []string{
		"whsec_" + key + "!",
		"whsk_" + key,
		"whpk_" + key,
		"whsec_" + key[:20],
		"nope_" + key,
		"longprefixhere_" + key,
	} {
		_, err := ParseSecret(in)
		require.Error(t, err, in)
		require.NotContains(t, err.Error(), key[:12], "error for %q leaks key material", in)
	}
}

func TestGenerateHMACSecret(t *testing.T) {
	t.Parallel()

	a, err := GenerateHMACSecret()
	require.NoError(t, err)
	b, err := GenerateHMACSecret()
	require.NoError(t, err)
	require.NotEqual(t, a.String(), b.String(), "two generated secrets must differ")
	require.Len(t, a.key, DefaultHMACSecretSize)
	require.Equal(t, HMACSHA256, a.Algorithm())
	require.True(t, strings.HasPrefix(a.String(), "whsec_"))
	require.Equal(t, a.String(), mustParse(t, a.String()).String())

	for _, size := range []int{MinHMACSecretSize, 48, MaxHMACSecretSize} {
		s, err := GenerateHMACSecretSize(size)
		require.NoError(t, err)
		require.Len(t, s.key, size)
	}
	for _, size := range []int{-1, 0, 23, 65} {
		_, err := GenerateHMACSecretSize(size)
		require.ErrorIs(t, err, ErrInvalidSecret, "size %d", size)
		require.ErrorContains(t, err, "want 24 to 64")
	}
}

func TestGenerateEd25519Secret(t *testing.T) {
	t.Parallel()

	priv, err := GenerateEd25519Secret()
	require.NoError(t, err)
	require.Equal(t, Ed25519, priv.Algorithm())
	require.True(t, priv.CanSign())
	require.True(t, strings.HasPrefix(priv.String(), "whsk_"))
	require.Equal(t, priv.String(), mustParse(t, priv.String()).String())

	pub, err := priv.Public()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(pub.String(), "whpk_"))
	require.False(t, pub.CanSign())

	other, err := GenerateEd25519Secret()
	require.NoError(t, err)
	require.NotEqual(t, priv.String(), other.String())
}

func TestSecretPublic(t *testing.T) {
	t.Parallel()

	pub, err := mustParse(t, rfcPrivateKey).Public()
	require.NoError(t, err)
	require.Equal(t, rfcPublicKey, pub.String())
	require.Equal(t, fmt.Sprintf("%x", []byte(pub.ed25519PublicKey())), rfcPublicKeyHex)

	again, err := pub.Public()
	require.NoError(t, err, "a public key is its own public key")
	require.Equal(t, rfcPublicKey, again.String())

	_, err = mustParse(t, specSecret).Public()
	require.ErrorIs(t, err, ErrInvalidSecret)
	require.ErrorContains(t, err, "has no public key")

	_, err = Secret{}.Public()
	require.ErrorIs(t, err, ErrInvalidSecret)
}

func TestSecretReceiverKey(t *testing.T) {
	t.Parallel()

	require.Equal(t, rfcPublicKey, mustParse(t, rfcPrivateKey).ReceiverKey().String(), "whsk_ gives its whpk_")
	require.Equal(t, rfcPublicKey, mustParse(t, rfcPublicKey).ReceiverKey().String(), "whpk_ is its own")
	require.Equal(t, specSecret, mustParse(t, specSecret).ReceiverKey().String(), "HMAC receivers need the secret")
	require.Equal(t, Secret{}, Secret{}.ReceiverKey())
}

func TestZeroSecret(t *testing.T) {
	t.Parallel()

	var zero Secret
	require.Equal(t, "", zero.String())
	require.Equal(t, Algorithm(0), zero.Algorithm())
	require.False(t, zero.CanSign())
	require.Equal(t, "[no secret]", fmt.Sprint(zero))
}

func TestAlgorithmString(t *testing.T) {
	t.Parallel()

	require.Equal(t, "HMAC-SHA256", HMACSHA256.String())
	require.Equal(t, "ed25519", Ed25519.String())
	require.Equal(t, "Algorithm(9)", Algorithm(9).String())
}

func TestSecretRedactedInFmtAndSlog(t *testing.T) {
	t.Parallel()

	hmacSecret := mustParse(t, specSecret)
	privKey := mustParse(t, rfcPrivateKey)
	pubKey := mustParse(t, rfcPublicKey)
	hmacKey := strings.TrimPrefix(specSecret, "whsec_")
	privKeyB64 := strings.TrimPrefix(rfcPrivateKey, "whsk_")

	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%20s", "%d"} {
		out := fmt.Sprintf(verb, hmacSecret) + fmt.Sprintf(verb, privKey) +
			fmt.Sprintf(verb, []Secret{hmacSecret}) + fmt.Sprintf(verb, struct{ S Secret }{privKey}) +
			fmt.Sprintf(verb, &hmacSecret)
		require.NotContains(t, out, hmacKey, "verb %s leaks the HMAC key", verb)
		require.NotContains(t, out, privKeyB64, "verb %s leaks the private key", verb)
	}
	require.Equal(t, "whsec_[REDACTED]", fmt.Sprint(hmacSecret))
	require.Equal(t, "whsk_[REDACTED]", fmt.Sprintf("%s", privKey))
	require.Equal(t, `"whsec_[REDACTED]"`, fmt.Sprintf("%q", hmacSecret))
	require.Equal(t, rfcPublicKey, fmt.Sprint(pubKey), "a public key is not secret and prints in full")
	require.Equal(t, specSecret, hmacSecret.String(), "String stays the serialized key")

	var buf bytes.Buffer
	for _, handler := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		logger := slog.New(handler)
		logger.Info("rotated", "old", hmacSecret, "new", privKey, slog.Any("public", pubKey))
		logger.Info("group", slog.Group("endpoint", "secret", hmacSecret))
	}
	logged := buf.String()
	require.NotContains(t, logged, hmacKey)
	require.NotContains(t, logged, privKeyB64)
	require.Contains(t, logged, "whsec_[REDACTED]")
	require.Contains(t, logged, "whsk_[REDACTED]")
	require.Contains(t, logged, rfcPublicKey)

	encoded, err := json.Marshal(hmacSecret)
	require.NoError(t, err)
	require.NotContains(t, string(encoded), hmacKey, "encoding/json sees no exported field")
}

// FuzzParseSecret checks that ParseSecret never panics, that every failure
// wraps ErrInvalidSecret, and that an accepted secret serializes to a form
// that parses back to the same key.
func FuzzParseSecret(f *testing.F) {
	for _, seed := range []string{
		"", specSecret, hmacSecretBase64, rfcPrivateKey, rfcPrivateSeed, rfcPublicKey,
		"whsec_", "whsk_", "whpk_", "whsec_" + b64(23), "whsec_" + b64(65), "whk_abc", " whsec_" + b64(32) + "\n",
		"whsec_" + b64(32)[:20] + "\n" + b64(32)[20:],
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		secret, err := ParseSecret(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidSecret) {
				t.Fatalf("ParseSecret(%q) error %v does not wrap ErrInvalidSecret", in, err)
			}
			return
		}
		again, err := ParseSecret(secret.String())
		if err != nil {
			t.Fatalf("ParseSecret(%q).String() = %q does not parse: %v", in, secret.String(), err)
		}
		if again.String() != secret.String() || again.Algorithm() != secret.Algorithm() || again.CanSign() != secret.CanSign() {
			t.Fatalf("round trip of %q changed the secret", in)
		}
	})
}
