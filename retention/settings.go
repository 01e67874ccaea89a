package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Settings are the dispatchers' retention settings as their maintenance
// passes record them in herald.retention_settings (every pass writes its
// own), for the processes that have no --retention of their own: the api
// judges a tenant's own retention and a replay's start by them. Until a
// dispatcher has run they are the defaults (migration 0035).
type Settings struct {
	// Retention is the dispatchers' --retention: history is kept this long.
	Retention time.Duration
	// RetryWindow is the deliveries' retry window.
	RetryWindow time.Duration
	// Interval is the partition interval.
	Interval time.Duration
}

// DB runs the queries of ReadSettings and TenantRetention;
// *pgxpool.Pool, *pgx.Conn and pgx.Tx are one.
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ReadSettings returns the settings the dispatchers last recorded.
func ReadSettings(ctx context.Context, db DB) (Settings, error) {
	var s Settings
	if err := db.QueryRow(ctx, selectSettings).Scan(&s.Retention, &s.RetryWindow, &s.Interval); err != nil {
		return Settings{}, fmt.Errorf("read retention settings: %w", err)
	}
	return s, nil
}

// MinTenantRetention is the shortest retention a tenant may be given: the
// retry window plus one partition interval, the floor Config.Check puts
// on the global retention, for the same reason (shorter, the purge would
// find the tenant's history still being retried).
func (s Settings) MinTenantRetention() time.Duration { return s.RetryWindow + s.Interval }

// Effective is the retention that holds for a tenant whose own is own
// (nil: none): the shorter of its own and the global one.
func (s Settings) Effective(own *time.Duration) time.Duration {
	if own == nil {
		return s.Retention
	}
	return min(*own, s.Retention)
}

// ErrTenantRetention is wrapped by every TenantRetentionError.
var ErrTenantRetention = errors.New("tenant retention refused")

// TenantRetentionError says why a tenant's own retention is refused.
type TenantRetentionError struct {
	Retention time.Duration
	// Problem says what is wrong and what to give instead, as a sentence
	// that follows the retention's name ("limits.retention_seconds …").
	Problem string
}

func (e *TenantRetentionError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrTenantRetention, e.Retention, e.Problem)
}

func (e *TenantRetentionError) Unwrap() error { return ErrTenantRetention }

// CheckTenant returns a *TenantRetentionError when d cannot be a tenant's
// own retention: it must be whole seconds, shorter than the global
// retention (whose partitions hold every tenant's history and are dropped
// only at their end) and at least MinTenantRetention.
func (s Settings) CheckTenant(d time.Duration) error {
	refuse := func(format string, args ...any) error {
		return &TenantRetentionError{Retention: d, Problem: fmt.Sprintf(format, args...)}
	}
	switch {
	case d <= 0 || d%time.Second != 0:
		return refuse("is not a positive whole number of seconds")
	case d >= s.Retention:
		return refuse("is not shorter than the dispatchers' --retention (%s, %d seconds): history is kept for every tenant alike up to it, so a tenant's own may only shorten it; give less than %d seconds, or null for the global retention",
			s.Retention, int64(s.Retention/time.Second), int64(s.Retention/time.Second))
	case d < s.MinTenantRetention():
		return refuse("is shorter than the retry window (%s) plus one partition interval (%s): the tenant's deliveries would still be retried when their history comes due; give at least %d seconds",
			s.RetryWindow, s.Interval, int64(s.MinTenantRetention()/time.Second))
	}
	return nil
}

// TenantRetention returns the retention that holds for tenantID (see
// Settings.Effective); a tenant that does not exist has the global one.
func TenantRetention(ctx context.Context, db DB, tenantID string) (time.Duration, error) {
	var d time.Duration
	if err := db.QueryRow(ctx, selectTenantRetention, tenantID).Scan(&d); err != nil {
		return 0, fmt.Errorf("read the retention of tenant %q: %w", tenantID, err)
	}
	return d, nil
}
