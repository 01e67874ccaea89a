package health

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxCertificateWarnings bounds the certificates one call of
// WarnExpiringCertificates warns of; the next call takes the rest.
const MaxCertificateWarnings = 500

// WarnExpiringCertificates publishes endpoint.certificate_expiring, in tx,
// for every endpoint whose client certificate lapses within
// Config.CertificateWarning of now and was not warned of yet (at most
// MaxCertificateWarnings), and marks it warned; a new certificate set on
// the endpoint is warned of again. It returns how many it warned of. The
// dispatcher calls it periodically (dispatcher.CertificateCheckInterval).
// Endpoints being erased are marked without an event.
func (t *Tracker) WarnExpiringCertificates(ctx context.Context, tx pgx.Tx, now time.Time) (int, error) {
	if t.cfg.CertificateWarning < 0 {
		return 0, nil
	}
	rows, err := tx.Query(ctx, claimExpiringCertificates, now, now.Add(t.cfg.CertificateWarning), MaxCertificateWarnings)
	if err != nil {
		return 0, fmt.Errorf("expiring certificates: %w", err)
	}
	var (
		events []CertificateExpiringEvent
		e      CertificateExpiringEvent
		erased bool
	)
	_, err = pgx.ForEachRow(rows, []any{&e.Endpoint.ID, &e.Endpoint.TenantID, &e.Endpoint.URL, &e.Endpoint.Description, &e.Subject, &e.ExpiresAt, &erased}, func() error {
		if !erased {
			events = append(events, e)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expiring certificates: %w", err)
	}
	for _, event := range events {
		t.cfg.Logger.WarnContext(ctx, "endpoint client certificate expiring", "endpoint_id", event.Endpoint.ID,
			"tenant_id", event.Endpoint.TenantID, "subject", event.Subject, "expires_at", event.ExpiresAt)
		if err := t.publish(ctx, tx, event.Endpoint, TypeCertificateExpiring, event.Endpoint.ID.String(), event); err != nil {
			return 0, err
		}
	}
	return len(events), nil
}
