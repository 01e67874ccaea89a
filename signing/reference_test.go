package signing

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// These tests check Herald against the Standard Webhooks reference library
// (github.com/standard-webhooks/standard-webhooks/libraries/go) in both
// directions. The reference library knows only HMAC (v1) and always uses
// the wall clock, so the timestamps here are time.Now.

func reference(t testing.TB, secret Secret) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret.String())
	require.NoError(t, err, "the reference library must accept our serialized secret")
	return wh
}

// randomMessage returns a message ID without "." and a body of arbitrary
// bytes, not necessarily UTF-8, from r.
func randomMessage(r *rand.Rand) (string, []byte) {
	id := "msg_" + strconv.FormatUint(r.Uint64(), 36)
	body := make([]byte, r.IntN(2048))
	for i := range body {
		body[i] = byte(r.UintN(256))
	}
	return id, body
}

func TestReferenceVerifiesHeraldSignatures(t *testing.T) {
	t.Parallel()

	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		secret, err := GenerateHMACSecretSize(MinHMACSecretSize + i%(MaxHMACSecretSize-MinHMACSecretSize+1))
		require.NoError(t, err)
		id, body := randomMessage(r)

		h := http.Header{}
		require.NoError(t, SignHeaders(h, id, time.Now(), body, secret))
		require.NoError(t, reference(t, secret).Verify(body, h), "message %d", i)

		tampered := append([]byte("x"), body...)
		require.ErrorIs(t, reference(t, secret).Verify(tampered, h), standardwebhooks.ErrNoMatchingSignature)
	}
}

func TestReferenceVerifiesHeraldRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)

	third, err := GenerateHMACSecret()
	require.NoError(t, err)

	// The header carries the new HMAC, an ed25519 entry the reference
	// library does not know, and the old HMAC.
	h := http.Header{}
	require.NoError(t, SignHeaders(h, "msg_rotation", time.Now(), b.body, b.hmacNew, b.edPrivate, b.hmacOld))
	require.Len(t, strings.Fields(h.Get(HeaderSignature)), 3)

	require.NoError(t, reference(t, b.hmacOld).Verify(b.body, h), "a receiver still on the old secret")
	require.NoError(t, reference(t, b.hmacNew).Verify(b.body, h), "a receiver already on the new secret")
	require.ErrorIs(t, reference(t, third).Verify(b.body, h), standardwebhooks.ErrNoMatchingSignature)
}

func TestHeraldVerifiesReferenceSignatures(t *testing.T) {
	t.Parallel()

	r := rand.New(rand.NewPCG(3, 4))
	for i := range 100 {
		secret, err := GenerateHMACSecretSize(MinHMACSecretSize + i%(MaxHMACSecretSize-MinHMACSecretSize+1))
		require.NoError(t, err)
		id, body := randomMessage(r)
		ts := time.Now()

		sig, err := reference(t, secret).Sign(id, ts, body)
		require.NoError(t, err)
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, id)
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)

		v := Verifier{Secrets: []Secret{secret}}
		require.NoError(t, v.Verify(h, body), "message %d", i)

		// A receiver configured with the bare base64 key, as the reference
		// library allows, verifies too.
		bare := mustParse(t, strings.TrimPrefix(secret.String(), HMACSecretPrefix))
		require.NoError(t, Verifier{Secrets: []Secret{bare}}.Verify(h, body))

		require.ErrorIs(t, v.Verify(h, append(body, ' ')), ErrNoMatchingSignature)
	}
}

func TestHeraldVerifiesReferenceRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// The reference library signs with one secret; a sender using it joins
	// the entries for a rotation itself.
	ts := time.Now()
	oldSig, err := reference(t, b.hmacOld).Sign("msg_rotation", ts, b.body)
	require.NoError(t, err)
	newSig, err := reference(t, b.hmacNew).Sign("msg_rotation", ts, b.body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set(HeaderID, "msg_rotation")
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, newSig+" "+oldSig)

	require.NoError(t, Verifier{Secrets: []Secret{b.hmacOld}}.Verify(h, b.body))
	require.NoError(t, Verifier{Secrets: []Secret{b.hmacNew}}.Verify(h, b.body))
}

func TestReferenceAgreesOnTimestampTolerance(t *testing.T) {
	t.Parallel()
	b := setup(t)

	for _, tt := range []struct {
		offset  time.Duration
		ours    error
		theirs  error
		message string
	}{
		{-10 * time.Minute, ErrTimestampTooOld, standardwebhooks.ErrMessageTooOld, "ten minutes old"},
		{10 * time.Minute, ErrTimestampTooNew, standardwebhooks.ErrMessageTooNew, "ten minutes ahead"},
		{-4 * time.Minute, nil, nil, "four minutes old"},
		{4 * time.Minute, nil, nil, "four minutes ahead"},
	} {
		h := http.Header{}
		require.NoError(t, SignHeaders(h, "msg_clock", time.Now().Add(tt.offset), b.body, b.hmacOld))
		theirs := reference(t, b.hmacOld).Verify(b.body, h)
		ours := Verifier{Secrets: []Secret{b.hmacOld}}.Verify(h, b.body)
		if tt.ours == nil {
			require.NoError(t, theirs, tt.message)
			require.NoError(t, ours, tt.message)
			continue
		}
		require.ErrorIs(t, theirs, tt.theirs, tt.message)
		require.ErrorIs(t, ours, tt.ours, tt.message)
	}
}

func TestReferenceSpecVector(t *testing.T) {
	t.Parallel()

	wh, err := standardwebhooks.NewWebhook(specSecret)
	require.NoError(t, err)
	theirs, err := wh.Sign(specMsgID, specTimestamp, specBody)
	require.NoError(t, err)
	ours, err := Sign(specMsgID, specTimestamp, specBody, mustParse(t, specSecret))
	require.NoError(t, err)
	require.Equal(t, specSignature, theirs)
	require.Equal(t, theirs, ours)
}

// FuzzSignMatchesReference checks that for any message ID Herald accepts,
// any timestamp and any body, Herald's v1 signature is byte for byte the
// reference library's.
func FuzzSignMatchesReference(f *testing.F) {
	f.Add(specMsgID, specTimestamp.Unix(), specBody)
	f.Add("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", int64(1674087231), []byte(`{"type":"contact.created"}`))
	f.Add("x", int64(0), []byte{})
	f.Add("évènement_☃", int64(1<<40), []byte{0, 0xff, '.', '\n'})

	secret := mustParse(f, specSecret)
	wh := reference(f, secret)
	f.Fuzz(func(t *testing.T, id string, unix int64, body []byte) {
		ts := time.Unix(unix, 0)
		ours, err := Sign(id, ts, body, secret)
		if err != nil {
			if checkOutgoingMessageID(id) == nil && unix >= 0 {
				t.Fatalf("Sign(%q, %d) failed for a valid ID and timestamp: %v", id, unix, err)
			}
			return
		}
		theirs, err := wh.Sign(id, ts, body)
		if err != nil {
			t.Fatalf("reference Sign(%q, %d): %v", id, unix, err)
		}
		if ours != theirs {
			t.Fatalf("Sign(%q, %d, %q) = %s, reference library gives %s", id, unix, body, ours, theirs)
		}
		err = Verifier{Secrets: []Secret{secret}, Now: func() time.Time { return ts }}.
			VerifyValues(id, strconv.FormatInt(unix, 10), theirs, body)
		if err != nil {
			t.Fatalf("verifying the reference signature of %q at %d: %v", id, unix, err)
		}
	})
}
