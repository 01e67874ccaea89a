package signing_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/heraldhq/herald/signing"
)

// The Standard Webhooks test vector: this message signed with this secret
// gives exactly this signature in every conforming implementation.
func ExampleSign() {
	secret, err := signing.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		fmt.Println(err)
		return
	}
	sig, err := signing.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`), secret)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sig)
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

// A sender signs with every active secret during a rotation; a receiver
// holding any one of them verifies.
func ExampleSignHeaders() {
	oldSecret, _ := signing.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	newSecret, err := signing.GenerateHMACSecret()
	if err != nil {
		fmt.Println(err)
		return
	}
	body := []byte(`{"type":"invoice.paid","data":{"id":"inv_123"}}`)

	req, err := http.NewRequest(http.MethodPost, "https://receiver.example/webhooks", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := signing.SignHeaders(req.Header, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", time.Now(), body, newSecret, oldSecret); err != nil {
		fmt.Println(err)
		return
	}

	receiverOnOldSecret := signing.Verifier{Secrets: []signing.Secret{oldSecret}}
	fmt.Println(receiverOnOldSecret.Verify(req.Header, body))
	// Output: <nil>
}

// A receiver verifies the raw body, then branches on the kind of failure.
func ExampleVerifier_Verify() {
	secret, _ := signing.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	v := signing.Verifier{
		Secrets: []signing.Secret{secret},
		// A fixed clock for the example; leave Now nil to use time.Now.
		Now: func() time.Time { return time.Unix(1614265330, 0).Add(10 * time.Minute) },
	}
	h := http.Header{}
	h.Set(signing.HeaderID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(signing.HeaderTimestamp, "1614265330")
	h.Set(signing.HeaderSignature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")

	err := v.Verify(h, []byte(`{"test": 2432232314}`))
	switch {
	case err == nil:
		fmt.Println("verified")
	case errors.Is(err, signing.ErrTimestampTooOld):
		fmt.Println("replayed or delayed:", err)
	default:
		fmt.Println("rejected:", err)
	}
	// Output: replayed or delayed: webhook-timestamp too old: 2021-02-25T15:02:10Z is 10m0s before now (2021-02-25T15:12:10Z), tolerance is 5m0s
}

// An ed25519 key pair: the sender keeps the whsk_ private key and gives
// receivers the whpk_ public key, which cannot sign.
func ExampleGenerateEd25519Secret() {
	private, err := signing.GenerateEd25519Secret()
	if err != nil {
		fmt.Println(err)
		return
	}
	public, err := private.Public()
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := time.Now()
	body := []byte(`{"type":"invoice.paid"}`)
	sig, err := signing.Sign("msg_1", ts, body, private)
	if err != nil {
		fmt.Println(err)
		return
	}

	v := signing.Verifier{Secrets: []signing.Secret{public}}
	fmt.Println(sig[:4], public.Algorithm(), public.CanSign())
	fmt.Println(v.VerifyValues("msg_1", fmt.Sprint(ts.Unix()), sig, body))
	// Output:
	// v1a, ed25519 false
	// <nil>
}

// Malformed secrets are errors that say what is wrong.
func ExampleParseSecret() {
	for _, s := range []string{
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"whsec_c2hvcnQ=",
		"whsk_not base64",
		"sk_live_abc",
	} {
		secret, err := signing.ParseSecret(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(secret.Algorithm(), len(secret.String()))
	}
	// Output:
	// HMAC-SHA256 38
	// HMAC-SHA256 38
	// invalid webhook secret: HMAC key is 5 bytes, want 24 to 64
	// invalid webhook secret: the whsk_ secret is not standard padded base64 (illegal base64 data at input byte 3)
	// invalid webhook secret: unknown prefix "sk_"; want whsec_ (HMAC), whsk_ (ed25519 private) or whpk_ (ed25519 public)
}

// Printing or logging a Secret shows only its kind; String is the key.
func ExampleSecret_LogValue() {
	secret, _ := signing.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Info("endpoint secret rotated", "secret", secret)
	fmt.Printf("%v %s\n", secret, secret)
	// Output:
	// level=INFO msg="endpoint secret rotated" secret=whsec_[REDACTED]
	// whsec_[REDACTED] whsec_[REDACTED]
}
