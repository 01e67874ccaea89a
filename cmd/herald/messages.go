package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/client"
)

var messageCommands = map[string]*command{
	"list": {
		tenant: true, help: "list the tenant's messages, newest first, with their deliveries' states",
		flags: messageFilterFlags,
		run:   listMessages,
	},
	"show": {tenant: true, usage: "<message-id>", args: 1, help: "show one message with its deliveries", run: showMessage},
	"tail": {
		tenant: true, help: "follow new messages and their deliveries' states live, until Ctrl-C",
		flags: func(fs *flag.FlagSet) {
			fs.Duration("since", 0, "also show messages published this long ago (default: only new ones)")
			fs.Duration("interval", time.Second, "how often to ask the api")
			fs.Duration("lag", defaultTailLag, "how long after its publication time a message may still appear (its publishing transaction was open that long)")
		},
		run: tailMessages,
	},
}

var publishCommand = &command{
	tenant: true, help: "publish an event through the outbox (API keys only)",
	flags: func(fs *flag.FlagSet) {
		fs.String("type", "", "the event type, e.g. invoice.paid (required)")
		fs.String("object", "", "the id of the object the event is about (required)")
		fs.String("data", "{}", "the payload, a JSON object")
		fs.String("idempotency-key", "", "a repeat with the same key returns the first message")
	},
	run: publish,
}

var resendCommand = &command{
	tenant: true, usage: "<message-id> <endpoint-id>", args: 2,
	help: "send a message to one endpoint again now, with the same webhook-id",
	run:  resend,
}

func messageFilterFlags(fs *flag.FlagSet) {
	fs.String("status", "", "only messages with a delivery in this state: pending, succeeded, failed, cancelled, skipped")
	fs.String("event-type", "", "only messages of this type")
	fs.String("endpoint", "", "only messages delivered to this endpoint id")
	fs.Int("limit", 20, "how many messages, 1 to 200")
}

func listMessages(ctx context.Context, e *env) error {
	filter := client.MessageFilter{Status: e.str("status"), EventType: e.str("event-type")}
	if ep := e.str("endpoint"); ep != "" {
		id, err := uuid.Parse(ep)
		if err != nil {
			return usagef("--endpoint %q is not an endpoint id", ep)
		}
		filter.EndpointID = id
	}
	p, err := e.api.ListMessages(ctx, e.tenant, filter, client.ListOptions{Limit: e.value("limit").(int)})
	if err != nil || e.json {
		return e.jsonOr(p, err)
	}
	rows := make([][]string, 0, len(p.Data))
	for _, m := range p.Data {
		rows = append(rows, messageRow(m))
	}
	if err := e.table(messageHeader, rows); err != nil {
		return err
	}
	if p.Next != "" {
		fmt.Fprintf(e.stderr, "more messages: raise --limit (at most 200), or narrow with --status, --event-type, --endpoint\n")
	}
	return nil
}

var messageHeader = []string{"PUBLISHED", "ID", "TYPE", "OBJECT", "DELIVERIES"}

func messageRow(m client.Message) []string {
	return []string{stamp(m.CreatedAt), m.ID.String(), m.EventType, fmt.Sprintf("%s v%d", m.Object.ID, m.Object.Version), deliveries(m)}
}

// deliveryOrder is the order states are listed in.
var deliveryOrder = []string{client.StatusPending, client.StatusSucceeded, client.StatusFailed, client.StatusCancelled, client.StatusSkipped}

// deliveries summarises a message's deliveries: "succeeded 2, pending 1".
func deliveries(m client.Message) string {
	var parts []string
	for _, s := range deliveryOrder {
		if n := m.DeliveryCounts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, ", ")
	case m.DispatchedAt == nil:
		return "not fanned out yet"
	}
	return "no endpoint subscribed"
}

// open reports whether a message's deliveries may still change on their own.
func open(m client.Message) bool {
	return m.DispatchedAt == nil || m.DeliveryCounts[client.StatusPending] > 0
}

func (e *env) messageArg(i int) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimPrefix(e.args[i], "msg_"))
	if err != nil {
		return uuid.Nil, usagef("%q is not a message id; herald messages list --tenant %s shows them", e.args[i], e.tenant)
	}
	return id, nil
}

func showMessage(ctx context.Context, e *env) error {
	id, err := e.messageArg(0)
	if err != nil {
		return err
	}
	m, err := e.api.GetMessage(ctx, e.tenant, id)
	if err != nil || e.json {
		return e.jsonOr(m, err)
	}
	if err := e.fields("id", m.ID.String(), "webhook-id", "msg_"+m.ID.String(), "type", m.EventType,
		"object", fmt.Sprintf("%s v%d", m.Object.ID, m.Object.Version), "published", stamp(m.CreatedAt),
		"deliveries", deliveries(m), "payload", string(m.Payload)); err != nil {
		return err
	}
	if len(m.Deliveries) == 0 {
		return nil
	}
	fmt.Fprintln(e.stdout)
	rows := make([][]string, 0, len(m.Deliveries))
	for _, d := range m.Deliveries {
		last := "-"
		if d.LastStatusCode != nil {
			last = fmt.Sprintf("HTTP %d", *d.LastStatusCode)
		}
		if d.LastError != nil && *d.LastError != "" {
			last = *d.LastError
		}
		rows = append(rows, []string{d.EndpointID.String(), d.Status, fmt.Sprint(d.AttemptCount), stampPtr(d.LastAttemptAt), stampPtr(d.NextAttemptAt), last})
	}
	return e.table([]string{"ENDPOINT", "STATUS", "ATTEMPTS", "LAST ATTEMPT", "NEXT ATTEMPT", "LAST RESULT"}, rows)
}

func publish(ctx context.Context, e *env) error {
	if e.str("type") == "" || e.str("object") == "" {
		return usagef("--type and --object are required: the event's type and the id of the object it is about")
	}
	data := json.RawMessage(e.str("data"))
	if !json.Valid(data) {
		return usagef("--data is not valid JSON; give an object, e.g. --data '{\"amount\":4200}'")
	}
	m, err := e.api.Publish(ctx, e.tenant, client.NewMessage{
		EventType: e.str("type"), ObjectID: e.str("object"), Data: data, IdempotencyKey: e.str("idempotency-key"),
	})
	if err != nil || e.json {
		return e.jsonOr(m, err)
	}
	return e.fields("id", m.ID.String(), "type", m.EventType, "object", fmt.Sprintf("%s v%d", m.Object.ID, m.Object.Version))
}

func resend(ctx context.Context, e *env) error {
	messageID, err := e.messageArg(0)
	if err != nil {
		return err
	}
	endpointID, err := e.endpointArg(1)
	if err != nil {
		return err
	}
	r, err := e.api.Resend(ctx, e.tenant, messageID, endpointID)
	if err != nil || e.json {
		return e.jsonOr(r, err)
	}
	_, err = fmt.Fprintf(e.stdout, "resending message %s to endpoint %s (delivery %s, was %s)\n", r.MessageID, r.EndpointID, r.DeliveryID, r.PreviousStatus)
	return err
}

// tailMessages polls the list for messages published since the newest it
// has seen, and re-reads the messages whose deliveries are still open,
// printing a line whenever one appears or its deliveries change.
// defaultTailLag is how far back each poll of a tail looks before the
// newest publication time it has seen. A message's publication time is
// when its publishing transaction began, so one published in a producer's
// longer transaction becomes visible after messages published later:
// looking back this far catches it.
const defaultTailLag = 10 * time.Second

func tailMessages(ctx context.Context, e *env) error {
	interval, lag := e.duration("interval"), e.duration("lag")
	if interval <= 0 {
		return usagef("--interval must be positive, e.g. 1s")
	}
	if lag < 0 {
		return usagef("--lag must not be negative, e.g. 10s")
	}
	t := tail{env: e, lag: lag, seen: map[uuid.UUID]seenMessage{}, open: map[uuid.UUID]bool{}}
	if since := e.duration("since"); since > 0 {
		t.since = time.Now().Add(-since)
		t.from = t.since.Add(-time.Nanosecond)
	} else {
		newest, err := e.api.ListMessages(ctx, e.tenant, client.MessageFilter{}, client.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		for _, m := range newest.Data {
			t.since, t.from = m.CreatedAt, m.CreatedAt
		}
	}
	if !e.json {
		fmt.Fprintf(e.stderr, "following tenant %s's messages; Ctrl-C stops\n", e.tenant)
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := t.poll(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

type tail struct {
	*env
	lag time.Duration
	// since is the newest publication time seen; the next poll asks from
	// lag before it on.
	since time.Time
	// from is the publication time a message must be later than to be
	// shown: messages published before the tail began are not.
	from time.Time
	// seen holds each message of the last lag (and each open one) with
	// its last printed summary.
	seen map[uuid.UUID]seenMessage
	// open holds the messages whose deliveries may still change.
	open map[uuid.UUID]bool
}

type seenMessage struct {
	createdAt time.Time
	summary   string
}

// maxOpen bounds the messages re-read on every poll.
const maxOpen = 200

func (t *tail) poll(ctx context.Context) error {
	fresh, err := client.All(ctx, func(ctx context.Context, o client.ListOptions) (client.Page[client.Message], error) {
		return t.api.ListMessages(ctx, t.tenant, client.MessageFilter{Since: t.since.Add(-t.lag)}, o)
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return err
	}
	listed := map[uuid.UUID]bool{}
	for i := len(fresh) - 1; i >= 0; i-- { // oldest first
		m := fresh[i]
		listed[m.ID] = true
		if m.CreatedAt.After(t.since) {
			t.since = m.CreatedAt
		}
		if err := t.show(m); err != nil {
			return err
		}
	}
	for id := range t.open {
		if listed[id] {
			continue
		}
		m, err := t.api.GetMessage(ctx, t.tenant, id)
		if ctx.Err() != nil {
			return nil
		}
		if client.IsNotFound(err) {
			delete(t.open, id)
			continue
		}
		if err != nil {
			return err
		}
		if err := t.show(m); err != nil {
			return err
		}
	}
	// What the next poll cannot list again and is settled need not be
	// remembered.
	for id, m := range t.seen {
		if !t.open[id] && m.createdAt.Before(t.since.Add(-t.lag)) {
			delete(t.seen, id)
		}
	}
	return nil
}

// show prints m if it is new or its deliveries changed.
func (t *tail) show(m client.Message) error {
	if !m.CreatedAt.After(t.from) {
		return nil
	}
	summary := deliveries(m)
	if prev, ok := t.seen[m.ID]; ok && prev.summary == summary {
		return nil
	}
	t.seen[m.ID] = seenMessage{createdAt: m.CreatedAt, summary: summary}
	if open(m) && len(t.open) < maxOpen {
		t.open[m.ID] = true
	} else {
		delete(t.open, m.ID)
	}
	if t.json {
		m.Payload = nil
		return json.NewEncoder(t.stdout).Encode(m)
	}
	_, err := fmt.Fprintf(t.stdout, "%s  %s  %s  %s v%d  %s\n", stamp(m.CreatedAt), m.ID, m.EventType, m.Object.ID, m.Object.Version, summary)
	return err
}
