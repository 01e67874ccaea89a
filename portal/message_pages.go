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

	"github.com/heraldhq/herald/deliverylog"
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

func messageViewOf(m deliverylog.MessageSummary) messageView {
	return messageView{ID: m.ID, EventType: m.EventType, ObjectID: m.ObjectID, ObjectVersion: m.ObjectVersion,
		CreatedAt: m.CreatedAt, Dispatched: m.DispatchedAt != nil}
}

// errStaleLogPage answers an after cursor the log did not make.
var errStaleLogPage = badRequest("This page of the log is no longer valid. Start again from the newest messages.")

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
	filter := deliverylog.MessageFilter{EventType: f.EventType}
	if f.Status != "" {
		status, err := deliverystatus.Parse(f.Status)
		if err != nil {
			return badRequest("The status filter is wrong: " + err.Error() + ".")
		}
		filter.Status = status
	}
	if f.Endpoint != "" {
		id, err := uuid.Parse(f.Endpoint)
		if err != nil {
			return badRequest("The endpoint filter must be the id of one of your endpoints; pick one from the list.")
		}
		filter.EndpointID = &id
	}
	data := logPage{Filter: f, Statuses: deliverystatus.All()}
	found := false
	for _, period := range logPeriods {
		data.Periods = append(data.Periods, option{Value: period.Value, Label: period.Label, Selected: period.Value == f.Period})
		if period.Value == f.Period {
			found = true
			if period.Back > 0 {
				since := time.Now().Add(-period.Back)
				filter.Since = &since
			}
		}
	}
	if !found {
		return badRequest(fmt.Sprintf("The time filter %q is not one of the choices; pick one from the list.", f.Period))
	}
	req, err := page.ParseRequest("", f.After)
	if err != nil {
		return errStaleLogPage
	}
	req.Limit = logPageSize

	pg, err := deliverylog.ListMessageSummaries(ctx, p.pool, s.TenantID, filter, req)
	if errors.Is(err, page.ErrInvalidCursor) {
		return errStaleLogPage
	}
	if err != nil {
		return err
	}
	data.Messages = make([]messageView, len(pg.Items))
	for i, m := range pg.Items {
		data.Messages[i] = messageViewOf(m)
	}
	if err := p.attachDeliveries(r, s, data.Messages); err != nil {
		return err
	}
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
	rows, err := p.pool.Query(ctx, listEndpointChoices, s.TenantID)
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
	deliveries, err := deliverylog.ListDeliveriesOfMessages(r.Context(), p.pool, s.TenantID, ids)
	if err != nil {
		return err
	}
	for _, d := range deliveries {
		i := index[d.MessageID]
		messages[i].Deliveries = append(messages[i].Deliveries, deliveryViewOf(d))
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

func attemptViewOf(a deliverylog.AttemptSummary) attemptView {
	return attemptView{
		ID: a.ID, DeliveryID: a.DeliveryID, MessageID: a.MessageID, EndpointID: a.EndpointID,
		Number:     a.AttemptNumber,
		Trigger:    a.Trigger,
		StartedAt:  a.StartedAt,
		DurationMS: a.DurationMS,
		StatusCode: valueOr(a.StatusCode, 0),
		Error:      valueOr(a.Error, ""),
		Succeeded:  a.Outcome == "succeeded",
	}
}

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
	msg, err := deliverylog.GetMessage(ctx, p.pool, s.TenantID, id)
	if errors.Is(err, deliverylog.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	m := messageViewOf(msg.MessageSummary)
	messages := []messageView{m}
	if err := p.attachDeliveries(r, s, messages); err != nil {
		return err
	}
	deliveries := messages[0].Deliveries
	attempts, err := deliverylog.ListAttemptsByDelivery(ctx, p.pool, s.TenantID, id)
	if err != nil {
		return err
	}
	for i := range deliveries {
		for _, a := range attempts {
			if a.DeliveryID == deliveries[i].ID {
				deliveries[i].Attempts = append(deliveries[i].Attempts, attemptViewOf(a))
			}
		}
	}
	pg := s.page(m.EventType, "messages", messagePage{Message: m, Deliveries: deliveries, Body: prettyJSON(string(msg.Payload))})
	pg.Flash = flash(r)
	p.render(w, r, http.StatusOK, "message", pg)
	return nil
}

func (p *Portal) attemptDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := parseID(r, "id")
	if err != nil {
		return err
	}
	detail, err := deliverylog.GetAttempt(r.Context(), p.pool, s.TenantID, id)
	if errors.Is(err, deliverylog.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	var headers map[string]any
	if err := json.Unmarshal(detail.RequestHeaders, &headers); err != nil {
		return fmt.Errorf("attempt %s: request headers: %w", id, err)
	}
	a := attemptViewOf(detail.AttemptSummary)
	a.EndpointURL = detail.EndpointURL
	a.EventType = detail.EventType
	a.RequestHeaders = headerList(headers)
	a.ResponseExcerpt = detail.ResponseExcerpt
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
