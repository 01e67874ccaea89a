package health_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/endpointauth"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/store"
)

// endpoint.certificate_expiring is published once per certificate, when
// it enters the warning period; a new certificate is warned of again.
func TestExpiringCertificateIsWarnedOfOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(b.pool, store.Config{Box: box})
	require.NoError(t, err)
	ca := webhooktest.NewCA(t)
	now := time.Now()
	setCertificate := func(endpoint uuid.UUID, name string, notAfter time.Time) {
		certPEM, keyPEM := ca.IssueClient(t, name, notAfter)
		config := &endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM}
		require.NoError(t, st.SetCredentials(ctx, endpoint, store.CredentialsChange{TLS: &config}))
	}
	warn := func() int {
		var n int
		inTx(t, b.pool, func(tx pgx.Tx) error {
			var err error
			n, err = b.tracker.WarnExpiringCertificates(ctx, tx, now)
			return err
		})
		return n
	}

	soon := now.Add(10 * 24 * time.Hour).Truncate(time.Second)
	setCertificate(b.endpoint, "soon", soon)
	later := insertEndpoint(t, b.pool, "globex")
	setCertificate(later, "later", now.Add(30*24*time.Hour))

	require.Equal(t, 1, warn())
	require.Equal(t, 0, warn(), "once per certificate")
	msgs := opsMessages(t, b.pool)
	require.Equal(t, []string{health.TypeCertificateExpiring}, types(msgs))
	var event health.CertificateExpiringEvent
	require.NoError(t, json.Unmarshal(msgs[0].Body.Data, &event))
	require.Equal(t, b.endpoint, event.Endpoint.ID)
	require.Equal(t, "acme", event.Endpoint.TenantID)
	require.Equal(t, "CN=soon", event.Subject)
	require.True(t, soon.Equal(event.ExpiresAt))

	setCertificate(b.endpoint, "renewed but soon again", soon.Add(time.Hour))
	require.Equal(t, 1, warn(), "a new certificate is warned of again")
	require.Len(t, opsMessages(t, b.pool), 2)

	quiet := health.New(health.Config{CertificateWarning: -1})
	setCertificate(b.endpoint, "third", soon.Add(2*time.Hour))
	inTx(t, b.pool, func(tx pgx.Tx) error {
		n, err := quiet.WarnExpiringCertificates(ctx, tx, now)
		require.Zero(t, n, "a negative CertificateWarning warns of nothing")
		return err
	})
}
