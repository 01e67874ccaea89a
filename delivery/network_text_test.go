package delivery_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
)

// nulName is a DNS name with a NUL byte, which Go's certificate parser
// accepts (it is IA5) and quotes in its verification error.
const nulName = "herald\x00.example"

// nulCertificate returns a self-signed certificate for nulName.
func nulCertificate(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{Organization: []string{"Herald test"}},
		DNSNames:     []string{nulName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// An endpoint whose TLS certificate names a host with a NUL byte fails
// verification with an error that quotes the name. Unsanitised, that error
// could not be stored (SQLSTATE 22021): no attempt was recorded, the job
// failed until River discarded it, and the delivery stayed pending with no
// job. The attempt is recorded with the error made storable and retried on
// the schedule.
func TestCertificateWithNULIsRecordedAndRetried(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})

	var reached atomic.Int64
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{nulCertificate(t)}}
	server.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	server.StartTLS()
	t.Cleanup(server.Close)
	u, err := url.Parse(server.URL)
	require.NoError(t, err)
	// By name, so that the verification error lists the certificate's names.
	id := b.enqueue(t, ctx, b.message(t, ctx), b.endpoint(t, ctx, "https://localhost:"+u.Port()+"/hook"))

	var attempts []attemptRow
	deadline := time.Now().Add(20 * time.Second)
	for len(attempts) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		attempts = b.attempts(t, ctx, id)
	}
	if len(attempts) < 2 {
		var errs []string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(array_agg(e->>'error'), '{}')
FROM herald.river_job j, unnest(j.errors) e WHERE j.kind = $1`, delivery.Kind).Scan(&errs))
		t.Fatalf("after 20 s, %d attempts recorded; want 2 (a failure and its retry). The job's errors: %q", len(attempts), errs)
	}
	for i, a := range attempts[:2] {
		require.Equal(t, i+1, a.Number)
		require.Equal(t, "retry", a.Outcome)
		require.Nil(t, a.StatusCode)
		require.NotNil(t, a.Error)
		require.True(t, utf8.ValidString(*a.Error))
		require.NotContains(t, *a.Error, "\x00")
		require.Contains(t, *a.Error, "x509: certificate is valid for herald")
		require.Contains(t, *a.Error, ".example, not localhost")
	}
	d := b.delivery(t, ctx, id)
	require.Equal(t, "pending", d.Status, "retried on the schedule")
	require.NotNil(t, d.LastError)
	require.NotContains(t, *d.LastError, "\x00")
	require.NotNil(t, d.NextAttemptAt)
	require.Zero(t, reached.Load(), "no request gets past the failed handshake")
}
