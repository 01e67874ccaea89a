package signing

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The test vector every reference library checks: this message, signed with
// specSecret, gives specSignature.
var (
	specMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = time.Unix(1614265330, 0)
	specBody      = []byte(`{"test": 2432232314}`)
)

// rfcV1aSignature is the ed25519 signature of the spec vector's content
// with RFC 8032's first test key, computed by an independent implementation
// (Python's cryptography package).
const rfcV1aSignature = "v1a,fldxM4gAKugP6nnt1hdz3sgGfZ6d99nzrMFnZOELIxbzEHoVmAb2ADpkJK7zgPePmPsle0zV9jSeGlHFG2NVAw=="

func TestSignSpecTestVector(t *testing.T) {
	t.Parallel()

	sig, err := Sign(specMsgID, specTimestamp, specBody, mustParse(t, specSecret))
	require.NoError(t, err)
	require.Equal(t, specSignature, sig)

	sig, err = Sign(specMsgID, specTimestamp, specBody, mustParse(t, hmacSecretBase64))
	require.NoError(t, err)
	require.Equal(t, specSignature, sig, "the same key without its prefix signs the same")
}

func TestSignEd25519Vector(t *testing.T) {
	t.Parallel()

	for _, key := range []string{rfcPrivateKey, rfcPrivateSeed} {
		sig, err := Sign(specMsgID, specTimestamp, specBody, mustParse(t, key))
		require.NoError(t, err)
		require.Equal(t, rfcV1aSignature, sig, "ed25519 signatures are deterministic")
	}

	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(rfcV1aSignature, "v1a,"))
	require.NoError(t, err)
	content := []byte(specMsgID + ".1614265330." + string(specBody))
	require.True(t, ed25519.Verify(mustParse(t, rfcPublicKey).ed25519PublicKey(), content, raw),
		"crypto/ed25519 verifies the signature over id.timestamp.body")
}

func TestSignRotation(t *testing.T) {
	t.Parallel()

	oldSecret := mustParse(t, specSecret)
	newSecret := mustParse(t, rfcPrivateKey)
	sig, err := Sign(specMsgID, specTimestamp, specBody, newSecret, oldSecret)
	require.NoError(t, err)
	require.Equal(t, rfcV1aSignature+" "+specSignature, sig, "one entry per secret, in the order given, space separated")

	third, err := GenerateHMACSecret()
	require.NoError(t, err)
	sig, err = Sign(specMsgID, specTimestamp, specBody, oldSecret, third, newSecret)
	require.NoError(t, err)
	entries := strings.Split(sig, " ")
	require.Len(t, entries, 3)
	require.Equal(t, specSignature, entries[0])
	require.True(t, strings.HasPrefix(entries[1], "v1,"))
	require.Equal(t, rfcV1aSignature, entries[2])
}

func TestSignErrors(t *testing.T) {
	t.Parallel()

	hmacSecret := mustParse(t, specSecret)
	tests := []struct {
		name    string
		msgID   string
		ts      time.Time
		secrets []Secret
		wantErr error
		wantMsg string
	}{
		{"no secrets", specMsgID, specTimestamp, nil, ErrNoSecrets, "sign message msg_p5jXN8AQM9LWM0D4loKWxJek"},
		{"public key cannot sign", specMsgID, specTimestamp, []Secret{hmacSecret, mustParse(t, rfcPublicKey)}, ErrInvalidSecret, "secret 2: invalid webhook secret: a whpk_ public key cannot sign"},
		{"zero secret", specMsgID, specTimestamp, []Secret{{}}, ErrInvalidSecret, "zero Secret"},
		{"too many secrets", specMsgID, specTimestamp, make([]Secret, MaxSignatures+1), ErrInvalidSecret, "33 secrets"},
		{"empty ID", "", specTimestamp, []Secret{hmacSecret}, ErrInvalidMessageID, "empty"},
		{"ID with a dot", "msg.1", specTimestamp, []Secret{hmacSecret}, ErrInvalidMessageID, `"msg.1" contains "."`},
		{"ID with a space", "msg 1", specTimestamp, []Secret{hmacSecret}, ErrInvalidMessageID, "white space or a control character at byte 3"},
		{"ID with a newline", "msg\n", specTimestamp, []Secret{hmacSecret}, ErrInvalidMessageID, "control character"},
		{"ID with DEL", "msg\x7f", specTimestamp, []Secret{hmacSecret}, ErrInvalidMessageID, "control character"},
		{"timestamp before 1970", specMsgID, time.Unix(-1, 0), []Secret{hmacSecret}, ErrInvalidTimestamp, "before 1970"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sig, err := Sign(tt.msgID, tt.ts, specBody, tt.secrets...)
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorContains(t, err, tt.wantMsg)
			require.Empty(t, sig)
		})
	}
}

func TestSignHeaders(t *testing.T) {
	t.Parallel()

	h := http.Header{}
	h.Set(HeaderSignature, "v1,stale")
	require.NoError(t, SignHeaders(h, specMsgID, specTimestamp, specBody, mustParse(t, specSecret)))
	require.Equal(t, specMsgID, h.Get("webhook-id"))
	require.Equal(t, "1614265330", h.Get("webhook-timestamp"))
	require.Equal(t, []string{specSignature}, h.Values("webhook-signature"), "replaces earlier values")

	untouched := http.Header{}
	err := SignHeaders(untouched, "bad.id", specTimestamp, specBody, mustParse(t, specSecret))
	require.ErrorIs(t, err, ErrInvalidMessageID)
	require.Empty(t, untouched, "a failed signing sets no header")

	err = SignHeaders(nil, specMsgID, specTimestamp, specBody, mustParse(t, specSecret))
	require.ErrorContains(t, err, "http.Header is nil")
}

func TestSignIgnoresSubsecondsAndZone(t *testing.T) {
	t.Parallel()

	ts := specTimestamp.Add(999 * time.Millisecond).In(time.FixedZone("UTC+9", 9*3600))
	sig, err := Sign(specMsgID, ts, specBody, mustParse(t, specSecret))
	require.NoError(t, err)
	require.Equal(t, specSignature, sig, "the timestamp is whole unix seconds")
}
