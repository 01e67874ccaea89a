package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/secretbox"
)

var (
	keyA = bytes.Repeat([]byte{0xa1}, secretbox.KeySize)
	keyB = bytes.Repeat([]byte{0xb2}, secretbox.KeySize)
)

func newBox(t *testing.T, key []byte) *secretbox.Box {
	t.Helper()
	box, err := secretbox.New(key)
	require.NoError(t, err)
	return box
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	box := newBox(t, keyA)

	secret := []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	sealed := box.Seal(secret, []byte("endpoint-1"))
	require.NotContains(t, string(sealed), string(secret))
	require.Len(t, sealed, 4+12+len(secret)+16)

	opened, err := box.Open(sealed, []byte("endpoint-1"))
	require.NoError(t, err)
	require.Equal(t, secret, opened)

	require.NotEqual(t, sealed, box.Seal(secret, []byte("endpoint-1")), "every seal uses a fresh nonce")
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	box := newBox(t, keyA)
	sealed := box.Seal([]byte("whsec_secret"), []byte("endpoint-1"))

	t.Run("another key", func(t *testing.T) {
		t.Parallel()
		_, err := newBox(t, keyB).Open(sealed, []byte("endpoint-1"))
		require.ErrorIs(t, err, secretbox.ErrWrongKey)
		require.ErrorContains(t, err, secretbox.EnvKey)
		require.ErrorContains(t, err, box.KeyID(), "the error names the key the value needs")
	})
	t.Run("other additional data", func(t *testing.T) {
		t.Parallel()
		_, err := box.Open(sealed, []byte("endpoint-2"))
		require.ErrorIs(t, err, secretbox.ErrCorrupt)
	})
	t.Run("altered", func(t *testing.T) {
		t.Parallel()
		altered := bytes.Clone(sealed)
		altered[len(altered)-1] ^= 1
		_, err := box.Open(altered, []byte("endpoint-1"))
		require.ErrorIs(t, err, secretbox.ErrCorrupt)
	})
	t.Run("truncated", func(t *testing.T) {
		t.Parallel()
		_, err := box.Open(sealed[:20], []byte("endpoint-1"))
		require.ErrorIs(t, err, secretbox.ErrCorrupt)
	})
}

func TestParse(t *testing.T) {
	t.Parallel()
	want := newBox(t, keyA).KeyID()

	for name, encoded := range map[string]string{
		"base64":            base64.StdEncoding.EncodeToString(keyA),
		"unpadded base64":   base64.RawStdEncoding.EncodeToString(keyA),
		"url-safe base64":   base64.URLEncoding.EncodeToString(keyA),
		"hex":               hex.EncodeToString(keyA),
		"upper-case hex":    strings.ToUpper(hex.EncodeToString(keyA)),
		"with a line break": base64.StdEncoding.EncodeToString(keyA) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			box, err := secretbox.Parse(encoded)
			require.NoError(t, err)
			require.Equal(t, want, box.KeyID())
		})
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()

	short := base64.StdEncoding.EncodeToString(keyA[:16])
	for name, tt := range map[string]struct{ encoded, message string }{
		"empty":         {"", "HERALD_SECRET_KEY is empty"},
		"16 bytes":      {short, "it has 24 characters"},
		"not encoded":   {"correct horse battery staple", "not 32 bytes in base64"},
		"hex of 31":     {hex.EncodeToString(keyA[:31]), "not 32 bytes"},
		"a passphrase ": {strings.Repeat("x", 44), "openssl rand -base64 32"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := secretbox.Parse(tt.encoded)
			require.ErrorContains(t, err, tt.message)
			if tt.encoded != "" {
				require.NotContains(t, err.Error(), tt.encoded, "errors never echo the key")
			}
		})
	}
}

func TestNewRejectsWrongSize(t *testing.T) {
	t.Parallel()
	_, err := secretbox.New(keyA[:16])
	require.ErrorContains(t, err, "16 bytes; it must be 32")
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	first, second := secretbox.Generate(), secretbox.Generate()
	require.NotEqual(t, first, second)
	box, err := secretbox.Parse(first)
	require.NoError(t, err)
	sealed := box.Seal([]byte("x"), nil)
	opened, err := box.Open(sealed, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("x"), opened)
}

// Printing or logging a box shows its key id, never the cipher's state.
func TestBoxDoesNotPrintKey(t *testing.T) {
	t.Parallel()
	box := newBox(t, keyA)
	want := "secretbox(key id " + box.KeyID() + ")"

	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		require.Equal(t, want, fmt.Sprintf(verb, box), verb)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("ready", "box", box)
	require.Contains(t, logged.String(), `"box":"`+want+`"`)
}
