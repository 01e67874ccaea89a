package signing

import (
	"bytes"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type testBundle struct {
	now       time.Time
	hmacOld   Secret
	hmacNew   Secret
	edPrivate Secret
	edPublic  Secret
	body      []byte
}

func setup(t *testing.T) *testBundle {
	t.Helper()

	generate := func(gen func() (Secret, error)) Secret {
		s, err := gen()
		require.NoError(t, err)
		return s
	}
	edPrivate := generate(GenerateEd25519Secret)
	edPublic, err := edPrivate.Public()
	require.NoError(t, err)
	return &testBundle{
		now:       time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
		hmacOld:   generate(GenerateHMACSecret),
		hmacNew:   generate(GenerateHMACSecret),
		edPrivate: edPrivate,
		edPublic:  edPublic,
		body:      []byte(`{"type":"invoice.paid","timestamp":"2026-12-02T12:00:00Z","data":{"id":"inv_123"}}`),
	}
}

func (b *testBundle) verifier(secrets ...Secret) Verifier {
	return Verifier{Secrets: secrets, Now: func() time.Time { return b.now }}
}

// headers signs b.body as message msg_1 at ts with secrets.
func (b *testBundle) headers(t *testing.T, ts time.Time, secrets ...Secret) http.Header {
	t.Helper()
	h := http.Header{}
	require.NoError(t, SignHeaders(h, "msg_1", ts, b.body, secrets...))
	return h
}

func TestVerifySpecTestVector(t *testing.T) {
	t.Parallel()

	v := Verifier{Secrets: []Secret{mustParse(t, specSecret)}, Now: func() time.Time { return specTimestamp }}
	require.NoError(t, v.VerifyValues(specMsgID, "1614265330", specSignature, specBody))

	v.Secrets = []Secret{mustParse(t, rfcPublicKey)}
	require.NoError(t, v.VerifyValues(specMsgID, "1614265330", rfcV1aSignature, specBody))
	require.NoError(t, v.VerifyValues(specMsgID, "1614265330", specSignature+" "+rfcV1aSignature, specBody),
		"a v1 entry the verifier has no secret for does not stop a v1a match")
}

func TestVerifyRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// During a rotation the sender signs with both secrets; a receiver
	// holding either one, or both, verifies.
	h := b.headers(t, b.now, b.hmacNew, b.hmacOld)
	require.NoError(t, b.verifier(b.hmacOld).Verify(h, b.body))
	require.NoError(t, b.verifier(b.hmacNew).Verify(h, b.body))
	require.NoError(t, b.verifier(b.hmacOld, b.hmacNew).Verify(h, b.body))

	// A receiver that already switched to the new secret verifies a sender
	// still on the old one as long as it keeps the old one as a candidate.
	h = b.headers(t, b.now, b.hmacOld)
	require.NoError(t, b.verifier(b.hmacNew, b.hmacOld).Verify(h, b.body))
	require.ErrorIs(t, b.verifier(b.hmacNew).Verify(h, b.body), ErrNoMatchingSignature)

	// Moving from HMAC to ed25519: both entries travel side by side.
	h = b.headers(t, b.now, b.hmacOld, b.edPrivate)
	require.NoError(t, b.verifier(b.hmacOld).Verify(h, b.body))
	require.NoError(t, b.verifier(b.edPublic).Verify(h, b.body))
	require.NoError(t, b.verifier(b.edPrivate).Verify(h, b.body), "a private key verifies with its public half")
}

func TestVerifyTolerance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	secret := b.hmacOld

	tests := []struct {
		name      string
		offset    time.Duration // timestamp minus now
		tolerance time.Duration
		wantErr   error
	}{
		{"now", 0, 0, nil},
		{"exactly 5 minutes old", -5 * time.Minute, 0, nil},
		{"exactly 5 minutes ahead", 5 * time.Minute, 0, nil},
		{"5 minutes 1 second old", -5*time.Minute - time.Second, 0, ErrTimestampTooOld},
		{"5 minutes 1 second ahead", 5*time.Minute + time.Second, 0, ErrTimestampTooNew},
		{"a day old", -24 * time.Hour, 0, ErrTimestampTooOld},
		{"negative tolerance means the default", -4 * time.Minute, -time.Second, nil},
		{"custom tolerance accepts", -9 * time.Minute, 10 * time.Minute, nil},
		{"custom tolerance rejects old", -31 * time.Second, 30 * time.Second, ErrTimestampTooOld},
		{"custom tolerance rejects new", 31 * time.Second, 30 * time.Second, ErrTimestampTooNew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := b.verifier(secret)
			v.Tolerance = tt.tolerance
			err := v.Verify(b.headers(t, b.now.Add(tt.offset), secret), b.body)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}

	err := b.verifier(secret).Verify(b.headers(t, b.now.Add(-time.Hour), secret), b.body)
	require.EqualError(t, err, "webhook-timestamp too old: 2026-12-02T11:00:00Z is 1h0m0s before now (2026-12-02T12:00:00Z), tolerance is 5m0s")
	err = b.verifier(secret).Verify(b.headers(t, b.now.Add(time.Hour), secret), b.body)
	require.ErrorContains(t, err, "is 1h0m0s after now (2026-12-02T12:00:00Z), tolerance is 5m0s; is the sender's clock right?")
}

func TestVerifyDefaultClock(t *testing.T) {
	t.Parallel()
	b := setup(t)

	v := Verifier{Secrets: []Secret{b.hmacOld}}
	require.NoError(t, v.Verify(b.headers(t, time.Now(), b.hmacOld), b.body), "Now defaults to time.Now")
	require.ErrorIs(t, v.Verify(b.headers(t, b.now.Add(-time.Hour), b.hmacOld), b.body), ErrTimestampTooOld)
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)

	ts := strconv.FormatInt(b.now.Unix(), 10)
	good, err := Sign("msg_1", b.now, b.body, b.hmacOld, b.edPrivate)
	require.NoError(t, err)
	other, err := GenerateHMACSecret()
	require.NoError(t, err)
	otherSig, err := Sign("msg_1", b.now, b.body, other)
	require.NoError(t, err)
	hmacOnlySig, err := Sign("msg_1", b.now, b.body, b.hmacOld)
	require.NoError(t, err)

	tests := []struct {
		name               string
		id, timestamp, sig string
		body               []byte
		secrets            []Secret
		wantErr            error
		wantMsg            string
	}{
		{"all headers missing", "", "", "", b.body, nil, ErrMissingHeader, "webhook-id, webhook-timestamp, webhook-signature"},
		{"missing ID", "", ts, good, b.body, nil, ErrMissingHeader, "missing webhook header: webhook-id"},
		{"missing timestamp", "msg_1", "", good, b.body, nil, ErrMissingHeader, "webhook-timestamp"},
		{"missing signature", "msg_1", ts, "", b.body, nil, ErrMissingHeader, "webhook-signature"},
		{"ID with a dot", "msg.1", ts, good, b.body, nil, ErrInvalidMessageID, `"msg.1" contains "."`},
		{"timestamp with fraction", "msg_1", ts + ".5", good, b.body, nil, ErrInvalidTimestamp, "not unix seconds"},
		{"timestamp in milliseconds is too new", "msg_1", ts + "000", good, b.body, nil, ErrTimestampTooNew, "after now"},
		{"timestamp with sign", "msg_1", "+" + ts, good, b.body, nil, ErrInvalidTimestamp, "digits only"},
		{"negative timestamp", "msg_1", "-" + ts, good, b.body, nil, ErrInvalidTimestamp, "digits only"},
		{"timestamp with space", "msg_1", ts + " ", good, b.body, nil, ErrInvalidTimestamp, "digits only"},
		{"timestamp as a date", "msg_1", "2026-12-02T12:00:00Z", good, b.body, nil, ErrInvalidTimestamp, "not unix seconds"},
		{"timestamp with leading zero", "msg_1", "0" + ts, good, b.body, nil, ErrInvalidTimestamp, "leading zeros"},
		{"timestamp overflows", "msg_1", "99999999999999999999", good, b.body, nil, ErrInvalidTimestamp, "out of range"},
		{"timestamp zero is too old", "msg_1", "0", good, b.body, nil, ErrTimestampTooOld, "1970-01-01T00:00:00Z"},
		{"maximal timestamp is too new", "msg_1", "9223372036854775807", good, b.body, nil, ErrTimestampTooNew, "9223372036854775807 is more than 292 years after now"},
		{"timestamp where time.Unix wraps is too new", "msg_1", "9223372036854775000", good, b.body, nil, ErrTimestampTooNew, "after now"},
		{"malformed signature header", "msg_1", ts, "v1;abc", b.body, nil, ErrInvalidSignatureHeader, "entry 1 is not of the form version,base64"},
		{"truncated signature", "msg_1", ts, good[:20], b.body, nil, ErrInvalidSignatureHeader, "not standard padded base64"},
		{"tampered body", "msg_1", ts, good, append([]byte(" "), b.body...), nil, ErrNoMatchingSignature, "2 secrets"},
		{"other message ID", "msg_2", ts, good, b.body, nil, ErrNoMatchingSignature, ""},
		{"other timestamp", "msg_1", strconv.FormatInt(b.now.Unix()+1, 10), good, b.body, nil, ErrNoMatchingSignature, ""},
		{"wrong secret", "msg_1", ts, otherSig, b.body, nil, ErrNoMatchingSignature, "1 v1 and 0 v1a signatures checked"},
		{"only unknown versions", "msg_1", ts, "v2,abc v3,def", b.body, nil, ErrNoMatchingSignature, "no v1 or v1a entry"},
		{"v1 entry but only ed25519 keys", "msg_1", ts, hmacOnlySig, b.body, []Secret{b.edPublic}, ErrNoMatchingSignature, "only v1 (HMAC) signatures but no whsec_ secret"},
		{"v1a entry but only HMAC keys", "msg_1", ts, strings.Split(good, " ")[1], b.body, []Secret{b.hmacOld}, ErrNoMatchingSignature, "only v1a (ed25519) signatures but no whpk_ key"},
		{"signature moved between versions", "msg_1", ts, "v1a," + strings.Repeat("A", 86) + "==", b.body, nil, ErrNoMatchingSignature, "0 v1 and 1 v1a"},
		{"no secrets", "msg_1", ts, good, b.body, []Secret{}, ErrNoSecrets, "set Verifier.Secrets"},
		{"zero secret", "msg_1", ts, good, b.body, []Secret{b.hmacOld, {}}, ErrInvalidSecret, "Verifier.Secrets[1] is the zero Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secrets := tt.secrets
			if secrets == nil {
				secrets = []Secret{b.hmacOld, b.edPublic}
			}
			err := b.verifier(secrets...).VerifyValues(tt.id, tt.timestamp, tt.sig, tt.body)
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorContains(t, err, tt.wantMsg)
		})
	}
}

func TestVerifyHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("lower-case wire names", func(t *testing.T) {
		t.Parallel()
		signed := b.headers(t, b.now, b.hmacOld)
		h := http.Header{}
		for _, name := range []string{HeaderID, HeaderTimestamp, HeaderSignature} {
			h.Add(name, signed.Get(name))
		}
		require.NoError(t, b.verifier(b.hmacOld).Verify(h, b.body))
	})

	t.Run("signatures split over several header lines", func(t *testing.T) {
		t.Parallel()
		h := b.headers(t, b.now, b.hmacNew)
		oldOnly, err := Sign("msg_1", b.now, b.body, b.hmacOld)
		require.NoError(t, err)
		h.Add(HeaderSignature, oldOnly)
		require.NoError(t, b.verifier(b.hmacOld).Verify(h, b.body))
		require.NoError(t, b.verifier(b.hmacNew).Verify(h, b.body))
	})

	t.Run("nil header", func(t *testing.T) {
		t.Parallel()
		err := b.verifier(b.hmacOld).Verify(nil, b.body)
		require.ErrorIs(t, err, ErrMissingHeader)
	})

	t.Run("request through a loopback server", func(t *testing.T) {
		t.Parallel()
		v := b.verifier(b.hmacOld)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := v.Verify(r.Header, body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)

		send := func(body []byte, secret Secret) (int, string) {
			req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
			require.NoError(t, err)
			require.NoError(t, SignHeaders(req.Header, "msg_1", b.now, b.body, secret))
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			msg, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, string(msg)
		}
		status, _ := send(b.body, b.hmacOld)
		require.Equal(t, http.StatusNoContent, status)
		status, msg := send(append(bytes.Clone(b.body), '\n'), b.hmacOld)
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, msg, "no matching webhook signature")
		status, _ = send(b.body, b.hmacNew)
		require.Equal(t, http.StatusBadRequest, status)
	})
}

func TestVerifyConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t)

	v := b.verifier(b.hmacOld, b.edPublic)
	h := b.headers(t, b.now, b.edPrivate)
	done := make(chan error)
	for range 8 {
		go func() { done <- v.Verify(h, b.body) }()
	}
	for range 8 {
		require.NoError(t, <-done)
	}
}

// FuzzVerifyTimestamp checks the tolerance decision against exact integer
// arithmetic, for any webhook-timestamp value and any clock between 1970
// and 2106: a timestamp is too old, too new or accepted exactly as its
// distance from the clock says, up to the largest int64, where time.Unix
// wraps round.
func FuzzVerifyTimestamp(f *testing.F) {
	for _, seed := range []struct {
		timestamp string
		now, nsec uint32
	}{
		{"1796212800", 1796212800, 0},
		{"1796213100", 1796212800, 0},
		{"1796213101", 1796212800, 0},
		{"1796212500", 1796212800, 999_999_999},
		{"0", 1796212800, 0},
		{"0", 0, 0},
		{"1796212800000", 1796212800, 0},
		{"9223372036854775000", 1796212800, 0},
		{"9223372036854775807", 1796212800, 0},
		{"9223372036854775807", 4294967295, 999_999_999},
	} {
		f.Add(seed.timestamp, seed.now, seed.nsec)
	}
	secret, err := ParseSecret(specSecret)
	if err != nil {
		f.Fatal(err)
	}
	body := []byte(`{"type":"invoice.paid"}`)
	f.Fuzz(func(t *testing.T, timestamp string, now, nsec uint32) {
		clock := time.Unix(int64(now), int64(nsec%1_000_000_000))
		unix, err := parseTimestamp(timestamp)
		if err != nil {
			return // TestVerifyRejects covers malformed values
		}
		sig, err := Sign("msg_1", time.Unix(unix, 0), body, secret)
		if err != nil {
			t.Fatalf("Sign at %d: %v", unix, err)
		}
		err = Verifier{Secrets: []Secret{secret}, Now: func() time.Time { return clock }}.
			VerifyValues("msg_1", timestamp, sig, body)

		// ahead is the timestamp minus the clock, in nanoseconds, exactly.
		ahead := new(big.Int).Mul(big.NewInt(unix), big.NewInt(int64(time.Second)))
		ahead.Sub(ahead, big.NewInt(clock.UnixNano()))
		tolerance := big.NewInt(int64(DefaultTolerance))
		var want error
		switch {
		case ahead.Cmp(tolerance) > 0:
			want = ErrTimestampTooNew
		case ahead.Cmp(new(big.Int).Neg(tolerance)) < 0:
			want = ErrTimestampTooOld
		}
		if want == nil && err != nil {
			t.Fatalf("timestamp %s at clock %s (%sns ahead): %v, want it accepted", timestamp, clock.UTC().Format(time.RFC3339Nano), ahead, err)
		}
		if want != nil && !errors.Is(err, want) {
			t.Fatalf("timestamp %s at clock %s (%sns ahead): %v, want %v", timestamp, clock.UTC().Format(time.RFC3339Nano), ahead, err, want)
		}
	})
}
