package portal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/page"
)

// logPageSize is how many messages one page of the delivery log shows.
const logPageSize = 25

// logPeriods are the choices of the log's time filter; the empty value
// reaches back without limit.
var logPeriods = []struct {
	Value string
	Label string
	Back  time.Duration
}{
	{"1h", "in the last hour", time.Hour},
	{"24h", "in the last 24 hours", 24 * time.Hour},
	{"7d", "in the last 7 days", 7 * 24 * time.Hour},
	{"30d", "in the last 30 days", 30 * 24 * time.Hour},
	{"all", "at any time", 0},
}

// defaultLogPeriod keeps the first page of a large tenant's log cheap.
const defaultLogPeriod = "7d"

// messageView is one message of the log.
type messageView struct {
	ID            uuid.UUID
	EventType     string
	ObjectID      string
	ObjectVersion int64
	CreatedAt     time.Time
	Dispatched    bool
	Deliveries    []deliveryView
}

// WebhookID is the webhook-id header value receivers see for this message.
func (m messageView) WebhookID() string { return "msg_" + m.ID.String() }

func scanMessage(row pgx.CollectableRow) (messageView, error) {
	var m messageView
	err := row.Scan(&m.ID, &m.EventType, &m.ObjectID, &m.ObjectVersion, &m.CreatedAt, &m.Dispatched)
	return m, err
}

// logFilter is the delivery log's query string.
type logFilter struct {
	Status    string
	EventType string
	Endpoint  string
	Period    string
	After     string
}

func (f logFilter) query(after string) string {
	v := url.Values{}
	for k, val := range map[string]string{"status": f.Status, "event_type": f.EventType, "endpoint": f.Endpoint, "period": f.Period, "after": after} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return Path + "/messages?" + v.Encode()
}

type logPage struct {
	Filter     logFilter
	Statuses   []deliverystatus.Status
	EventTypes []string
	Endpoints  []endpointView
	Periods    []option
	Messages   []messageView
	FirstURL   string
	NextURL    string
}

func (p *Portal) messageLog(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	q := r.URL.Query()
	f := logFilter{Status: q.Get("status"), EventType: q.Get("event_type"), Endpoint: q.Get("endpoint"), Period: q.Get("period"), After: q.Get("after")}
	if f.Period == "" {
		f.Period = defaultLogPeriod
	}
	if f.Status != "" {
		if _, err := deliverystatus.Parse(f.Status); err != nil {
			return badRequest("The status filter is wrong: " + err.Error() + ".")
		}
	}
	var endpointID *uuid.UUID
	if f.Endpoint != "" {
		id, err := uuid.Parse(f.Endpoint)
		if err != nil {
			return badRequest("The endpoint filter must be the id of one of your endpoints; pick one from the list.")
		}
		endpointID = &id
	}
	var since *time.Time
	data := logPage{Filter: f, Statuses: deliverystatus.All()}
	found := false
	for _, period := range logPeriods {
		data.Periods = append(data.Periods, option{Value: period.Value, Label: period.Label, Selected: period.Value == f.Period})
		if period.Value == f.Period {
			found = true
			if period.Back > 0 {
				t := time.Now().Add(-period.Back)
				since = &t
			}
		}
	}
	if !found {
		return badRequest(fmt.Sprintf("The time filter %q is not one of the choices; pick one from the list.", f.Period))
	}
	req, err := page.ParseRequest("", f.After)
	if err != nil {
		return badRequest("This page of the log is no longer valid. Start again from the newest messages.")
	}
	req.Limit = logPageSize
	var afterID *uuid.UUID
	if req.After != nil {
		id, err := uuid.Parse(req.After.ID)
		if err != nil {
			return badRequest("This page of the log is no longer valid. Start again from the newest messages.")
		}
		afterID = &id
	}

	rows, err := p.pool.Query(ctx, listMessages, s.TenantID, f.EventType, f.Status, endpointID, since, req.AfterTime(), afterID, req.Size()+1)
	if err != nil {
		return fmt.Errorf("list messages: %w", err)
	}
	messages, err := pgx.CollectRows(rows, scanMessage)
	if err != nil {
		return fmt.Errorf("list messages: %w", err)
	}
	pg := page.Trim(req, messages, func(m messageView) page.Cursor { return page.Cursor{CreatedAt: m.CreatedAt, ID: m.ID.String()} })
	if err := p.attachDeliveries(r, s, pg.Items); err != nil {
		return err
	}
	data.Messages = pg.Items
	if pg.Next != nil {
		data.NextURL = f.query(pg.Next.String())
	}
	if f.After != "" {
		data.FirstURL = f.query("")
	}
	if data.EventTypes, err = p.eventTypes(r, s); err != nil {
		return err
	}
	if f.EventType != "" && !slices.Contains(data.EventTypes, f.EventType) {
		data.EventTypes = append(data.EventTypes, f.EventType)
	}
	rows, err = p.pool.Query(ctx, listEndpoints, s.TenantID)
	if err != nil {
		return fmt.Errorf("list endpoints: %w", err)
	}
	if data.Endpoints, err = pgx.CollectRows(rows, scanEndpoint); err != nil {
		return fmt.Errorf("list endpoints: %w", err)
	}
	p.render(w, r, http.StatusOK, "messages", s.page("Delivery log", "messages", data))
	return nil
}

// attachDeliveries loads the deliveries of the listed messages in one query.
func (p *Portal) attachDeliveries(r *http.Request, s *session, messages []messageView) error {
	if len(messages) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(messages))
	index := make(map[uuid.UUID]int, len(messages))
	for i, m := range messages {
		ids[i] = m.ID
		index[m.ID] = i
	}
	rows, err := p.pool.Query(r.Context(), selectDeliveriesOfMessages, ids, s.TenantID)
	if err != nil {
		return fmt.Errorf("deliveries of messages: %w", err)
	}
	deliveries, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return fmt.Errorf("deliveries of messages: %w", err)
	}
	for _, d := range deliveries {
		i := index[d.MessageID]
		messages[i].Deliveries = append(messages[i].Deliveries, d)
	}
	return nil
}

func (p *Portal) eventTypes(r *http.Request, s *session) ([]string, error) {
	rows, err := p.pool.Query(r.Context(), selectEventTypesSeen, s.TenantID)
	if err != nil {
		return nil, fmt.Errorf("event types: %w", err)
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("event types: %w", err)
	}
	return types, nil
}

// attemptView is one HTTP attempt.
type attemptView struct {
	ID              uuid.UUID
	DeliveryID      uuid.UUID
	MessageID       uuid.UUID
	EndpointID      uuid.UUID
	EndpointURL     string
	EventType       string
	Number          int
	Trigger         string
	StartedAt       time.Time
	DurationMS      int
	StatusCode      int
	Error           string
	Succeeded       bool
	RequestHeaders  []header
	ResponseExcerpt string
}

type header struct{ Name, Value string }

type messagePage struct {
	Message    messageView
	Deliveries []deliveryView
	Body       string
}

func (p *Portal) messageDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	id, err := parseID(r, "id")
	if err != nil {
		return err
	}
	var m messageView
	var body string
	err = p.pool.QueryRow(ctx, selectMessage, id, s.TenantID).Scan(&m.ID, &m.EventType, &m.ObjectID, &m.ObjectVersion, &m.CreatedAt, &m.Dispatched, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotFound
	}
	if err != nil {
		return fmt.Errorf("load message %s: %w", id, err)
	}
	messages := []messageView{m}
	if err := p.attachDeliveries(r, s, messages); err != nil {
		return err
	}
	deliveries := messages[0].Deliveries
	rows, err := p.pool.Query(ctx, selectAttemptsOfMessage, id, s.TenantID)
	if err != nil {
		return fmt.Errorf("attempts of message %s: %w", id, err)
	}
	attempts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (attemptView, error) {
		var a attemptView
		err := row.Scan(&a.ID, &a.DeliveryID, &a.Number, &a.Trigger, &a.StartedAt, &a.DurationMS, &a.StatusCode, &a.Error)
		return a, err
	})
	if err != nil {
		return fmt.Errorf("attempts of message %s: %w", id, err)
	}
	for i := range deliveries {
		for _, a := range attempts {
			if a.DeliveryID == deliveries[i].ID {
				deliveries[i].Attempts = append(deliveries[i].Attempts, a)
			}
		}
	}
	pg := s.page(m.EventType, "messages", messagePage{Message: m, Deliveries: deliveries, Body: prettyJSON(body)})
	pg.Flash = flash(r)
	p.render(w, r, http.StatusOK, "message", pg)
	return nil
}

func (p *Portal) attemptDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := parseID(r, "id")
	if err != nil {
		return err
	}
	var a attemptView
	var outcome string
	var headers map[string]any
	err = p.pool.QueryRow(r.Context(), selectAttempt, id, s.TenantID).Scan(&a.ID, &a.DeliveryID, &a.MessageID, &a.EndpointID,
		&a.EndpointURL, &a.EventType, &a.Number, &a.Trigger, &a.StartedAt, &a.DurationMS, &a.StatusCode, &a.Error,
		&outcome, &headers, &a.ResponseExcerpt)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotFound
	}
	if err != nil {
		return fmt.Errorf("load attempt %s: %w", id, err)
	}
	a.Succeeded = outcome == "succeeded"
	a.RequestHeaders = headerList(headers)
	p.render(w, r, http.StatusOK, "attempt", s.page(fmt.Sprintf("Attempt %d", a.Number), "messages", struct{ Attempt attemptView }{a}))
	return nil
}

// headerList turns the stored request headers (a JSON object whose values
// are strings or arrays of strings) into sorted name/value pairs.
func headerList(h map[string]any) []header {
	var out []header
	for name, v := range h {
		switch v := v.(type) {
		case string:
			out = append(out, header{name, v})
		case []any:
			for _, item := range v {
				out = append(out, header{name, fmt.Sprint(item)})
			}
		default:
			out = append(out, header{name, fmt.Sprint(v)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return strings.ToLower(out[i].Name) < strings.ToLower(out[j].Name) })
	return out
}

// prettyJSON indents a JSON body for reading; anything else is shown as is.
func prettyJSON(body string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(body), "", "  "); err != nil {
		return body
	}
	return buf.String()
}
