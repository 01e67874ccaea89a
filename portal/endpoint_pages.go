package portal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/deliverylog"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/retention"
	"github.com/heraldhq/herald/store"
)

// endpointView is an endpoint as the pages show it.
type endpointView struct {
	ID             uuid.UUID
	URL            string
	Description    string
	EventTypes     []string
	Enabled        bool
	DisabledReason string
	DisabledAt     *time.Time
	FailingSince   *time.Time
	LastSuccessAt  *time.Time
	CreatedAt      time.Time
	Ordering       store.Ordering
	// BreakerOpenedAt is when the endpoint's breaker opened, nil while it
	// is closed (health.BreakerThreshold).
	BreakerOpenedAt *time.Time
	// Attempts in the last 24 hours, on the list page only.
	Succeeded24h int
	Failed24h    int
}

func scanEndpoint(row pgx.CollectableRow) (endpointView, error) {
	var e endpointView
	err := row.Scan(&e.ID, &e.URL, &e.Description, &e.EventTypes, &e.Enabled, &e.DisabledReason,
		&e.DisabledAt, &e.FailingSince, &e.LastSuccessAt, &e.CreatedAt, &e.Ordering, &e.BreakerOpenedAt, &e.Succeeded24h, &e.Failed24h)
	return e, err
}

// deliveryView is one (message, endpoint) delivery in a list.
type deliveryView struct {
	ID             uuid.UUID
	MessageID      uuid.UUID
	EndpointID     uuid.UUID
	EndpointURL    string
	EventType      string
	Status         deliverystatus.Status
	AttemptCount   int
	LastStatusCode int
	LastError      string
	NextAttemptAt  *time.Time
	// CreatedAt is when the message was published.
	CreatedAt time.Time
	Attempts  []attemptView
}

func deliveryViewOf(d deliverylog.ListedDelivery) deliveryView {
	return deliveryView{
		ID: d.ID, MessageID: d.MessageID, EndpointID: d.EndpointID,
		EndpointURL:    d.EndpointURL,
		EventType:      d.EventType,
		Status:         d.Status,
		AttemptCount:   d.AttemptCount,
		LastStatusCode: valueOr(d.LastStatusCode, 0),
		LastError:      valueOr(d.LastError, ""),
		NextAttemptAt:  d.NextAttemptAt,
		CreatedAt:      d.PublishedAt,
	}
}

// valueOr returns *p, or none when p is nil.
func valueOr[T any](p *T, none T) T {
	if p == nil {
		return none
	}
	return *p
}

// parseID reads a UUID path parameter. A malformed id is "not found": it
// names nothing.
func parseID(r *http.Request, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(chi.URLParam(r, name))
	if err != nil {
		return uuid.Nil, errNotFound
	}
	return id, nil
}

// loadEndpoint returns the session's endpoint with the id in the path.
func (p *Portal) loadEndpoint(ctx context.Context, r *http.Request, s *session) (endpointView, error) {
	id, err := parseID(r, "id")
	if err != nil {
		return endpointView{}, err
	}
	rows, err := p.pool.Query(ctx, selectEndpoint, id, s.TenantID)
	if err != nil {
		return endpointView{}, fmt.Errorf("load endpoint %s: %w", id, err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEndpoint)
	if errors.Is(err, pgx.ErrNoRows) {
		return endpointView{}, errNotFound
	}
	if err != nil {
		return endpointView{}, fmt.Errorf("load endpoint %s: %w", id, err)
	}
	return e, nil
}

func (p *Portal) endpointList(w http.ResponseWriter, r *http.Request, s *session) error {
	rows, err := p.pool.Query(r.Context(), listEndpoints, s.TenantID)
	if err != nil {
		return fmt.Errorf("list endpoints: %w", err)
	}
	endpoints, err := pgx.CollectRows(rows, scanEndpoint)
	if err != nil {
		return fmt.Errorf("list endpoints: %w", err)
	}
	pg := s.page("Endpoints", "endpoints", struct{ Endpoints []endpointView }{endpoints})
	pg.Flash = flash(r)
	p.render(w, r, http.StatusOK, "endpoints", pg)
	return nil
}

// endpointPage is the endpoint detail page's data.
type endpointPage struct {
	Endpoint endpointView
	// Options are the endpoint's channels, filter, headers (secret values
	// masked), timeout and retry policy, as the store shows them.
	Options store.Endpoint
	// Secret is the revealed signing secret; empty until the person asks.
	Secret        string
	Day, Week     chart
	Recent        []deliveryView
	GraceOptions  []option
	ReplayPeriods []option
	// Kept is how long the tenant's history is kept and how far back a
	// replay reaches.
	Kept    keptView
	Replays []replayView
	// HeldBack are the objects of an ordered endpoint whose head keeps
	// failing, holding back their later versions.
	HeldBack []heldBackView
	// Credentials says how the endpoint authenticates, no secret shown.
	Credentials store.CredentialsSummary
}

// heldBackView is the head of an ordered endpoint's line that has failed
// since it became the head: why, and what waits behind it.
type heldBackView struct {
	ObjectID     string
	Version      int64
	Attempts     int
	Since        *time.Time
	NextAttempt  *time.Time
	LastError    string
	LastStatus   int
	WaitingCount int
}

// heldBackShown is how many held-back objects the endpoint page lists.
const heldBackShown = 20

func (p *Portal) heldBack(ctx context.Context, s *session, e endpointView) ([]heldBackView, error) {
	if e.Ordering != store.OrderingObject {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx, selectHeldBack, e.ID, s.TenantID, heldBackShown)
	if err != nil {
		return nil, fmt.Errorf("held-back objects of %s: %w", e.ID, err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowToStructByPos[heldBackView])
	if err != nil {
		return nil, fmt.Errorf("held-back objects of %s: %w", e.ID, err)
	}
	return held, nil
}

// option is one choice of a select.
type option struct {
	Value, Label string
	Selected     bool
}

// recentDeliveries is how many deliveries the endpoint page lists.
const recentDeliveries = 10

func (p *Portal) endpointDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	return p.showEndpoint(w, r, s, "", flash(r))
}

// showEndpoint renders the endpoint page, with the secret when it was just
// revealed or rotated, and a notice.
func (p *Portal) showEndpoint(w http.ResponseWriter, r *http.Request, s *session, secret, notice string) error {
	ctx := r.Context()
	e, err := p.loadEndpoint(ctx, r, s)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	kept, err := retention.TenantRetention(ctx, p.pool, s.TenantID)
	if err != nil {
		return err
	}
	data := endpointPage{Endpoint: e, Secret: secret, GraceOptions: graceOptions(), ReplayPeriods: replayPeriods(kept),
		Kept: keptView{For: humanDuration(kept), Earliest: now.Add(-kept)}}
	if data.Options, err = p.store.GetEndpoint(ctx, e.ID); err != nil {
		return err
	}
	data.Day, data.Week, err = p.outcomeCharts(ctx, s, e.ID, now)
	if err != nil {
		return err
	}
	if data.Credentials, err = p.credentialsOf(ctx, e.ID); err != nil {
		return err
	}
	recent, err := deliverylog.ListRecentDeliveries(ctx, p.pool, s.TenantID, e.ID, recentDeliveries)
	if err != nil {
		return err
	}
	data.Recent = make([]deliveryView, len(recent))
	for i, d := range recent {
		data.Recent[i] = deliveryViewOf(d)
	}
	if data.Replays, err = p.endpointReplays(r, s, e); err != nil {
		return err
	}
	if data.HeldBack, err = p.heldBack(ctx, s, e); err != nil {
		return err
	}
	pg := s.page(e.URL, "endpoints", data)
	pg.Flash = notice
	p.render(w, r, http.StatusOK, "endpoint", pg)
	return nil
}

// outcomeCharts builds the 24-hour and 7-day charts from hourly counts.
func (p *Portal) outcomeCharts(ctx context.Context, s *session, endpointID uuid.UUID, now time.Time) (day, week chart, err error) {
	weekStart := now.Truncate(24*time.Hour).AddDate(0, 0, -6)
	rows, err := p.pool.Query(ctx, selectHourlyOutcomes, endpointID, weekStart, s.TenantID)
	if err != nil {
		return chart{}, chart{}, fmt.Errorf("outcomes of %s: %w", endpointID, err)
	}
	counts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (hourCount, error) {
		var c hourCount
		err := row.Scan(&c.Hour, &c.Succeeded, &c.Failed)
		return c, err
	})
	if err != nil {
		return chart{}, chart{}, fmt.Errorf("outcomes of %s: %w", endpointID, err)
	}
	return dayChart(counts, now), weekChart(counts, now), nil
}

// graceOptions are the choices for how long a rotated-out secret stays valid.
func graceOptions() []option {
	return []option{
		{Value: "1h", Label: "1 hour"},
		{Value: "24h", Label: "24 hours", Selected: true},
		{Value: "72h", Label: "3 days"},
		{Value: "168h", Label: "7 days"},
	}
}

// replayPeriods are the choices for how far back a replay reaches within
// kept, the tenant's retention: the usual periods that fit, and kept
// itself when none is exactly that long.
func replayPeriods(kept time.Duration) []option {
	var out []option
	for _, o := range []option{
		{Value: "15m", Label: "15 minutes ago"},
		{Value: "1h", Label: "1 hour ago", Selected: true},
		{Value: "6h", Label: "6 hours ago"},
		{Value: "24h", Label: "24 hours ago"},
		{Value: "72h", Label: "3 days ago"},
		{Value: "168h", Label: "7 days ago"},
		{Value: "720h", Label: "30 days ago"},
	} {
		if durationOf(o) <= kept {
			out = append(out, o)
		}
	}
	if len(out) == 0 || durationOf(out[len(out)-1]) < kept {
		out = append(out, option{Value: kept.String(), Label: humanDuration(kept) + " ago, all history kept"})
	}
	return out
}

// durationOf returns the period of a choice of replayPeriods.
func durationOf(o option) time.Duration {
	d, _ := time.ParseDuration(o.Value)
	return d
}

// keptView says how long a tenant's history is kept.
type keptView struct {
	// For is the retention in words ("30 days").
	For string
	// Earliest is the earliest replayable time, now less the retention.
	Earliest time.Time
}

// humanDuration says d in days, hours or minutes when it is a whole number
// of one of them, else as Go does.
func humanDuration(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d >= u.unit && d%u.unit == 0 {
			n := int64(d / u.unit)
			if n == 1 {
				return "1 " + u.name
			}
			return fmt.Sprintf("%d %ss", n, u.name)
		}
	}
	return d.String()
}
