package endpointauth_test

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/endpointauth"
	"github.com/heraldhq/herald/internal/webhooktest"
)

func TestParseTLS(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	notAfter := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	certPEM, keyPEM := ca.IssueClient(t, "herald", notAfter)

	p, err := endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM, CABundle: ca.PEM}.Parse(time.Now())
	require.NoError(t, err)
	require.Equal(t, "CN=herald", p.Subject)
	require.True(t, notAfter.Equal(p.NotAfter))
	config := p.Config()
	require.Len(t, config.Certificates, 1)
	_, err = config.Certificates[0].Leaf.Verify(x509.VerifyOptions{Roots: config.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "the bundle's CA is among the roots")

	caOnly, err := endpointauth.TLS{CABundle: ca.PEM}.Parse(time.Now())
	require.NoError(t, err)
	require.Nil(t, caOnly.Certificate)
	require.Empty(t, caOnly.Config().Certificates)

	// Stored settings stay usable once their certificate has expired: the
	// receiver decides.
	_, err = endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM}.Parse(notAfter)
	require.Error(t, err, "expired when set")
	_, err = endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM}.Reparse()
	require.NoError(t, err)
}
