package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Event is one webhook as the receiver stored it: the fields of its verified
// payload and where it came from.
//
// Herald's payload is {"type","timestamp","object":{"id","version"},"data"}.
// Other Standard Webhooks senders send {"type","timestamp","data"}; their
// events have an empty ObjectID and a Version of 0.
type Event struct {
	// ID is the event's row in the inbox, webhook_inbox.events.
	ID int64
	// Source names the sender (or the tenant) the event came from: the
	// source of the Handler that stored it.
	Source string
	// WebhookID is the webhook-id header: the sender's message ID, the same
	// on every retry and resend, and the dedupe key within Source.
	WebhookID string

	// Type is the payload's "type", such as "invoice.paid". Never empty.
	Type string
	// Timestamp is the payload's "timestamp": when the sender created the
	// event. Zero when the payload has none. Do not order updates by it:
	// two events can share a second. Use Version.
	Timestamp time.Time
	// ObjectID is the payload's "object.id": the object the event is about.
	// Empty when the payload has no "object".
	ObjectID string
	// Version is the payload's "object.version": it grows by one with
	// every event about ObjectID, so it orders updates where timestamps
	// cannot (see ApplyIfNewer). 0 when the payload has none.
	Version int64
	// Data is the payload's "data", undecoded. Nil when absent.
	Data json.RawMessage
	// Payload is the request body exactly as received and verified.
	Payload []byte

	// ReceivedAt is when the inbox first stored the event.
	ReceivedAt time.Time
	// Attempts counts the earlier attempts to process the event that
	// failed, including those during which it killed its process: 0 on the
	// first attempt.
	Attempts int
}

// errMalformedPayload marks a verified body that is not a webhook payload.
var errMalformedPayload = errors.New("malformed webhook payload")

// decodePayload fills the payload fields of ev from body. It accepts any
// JSON object with a non-empty string "type"; "timestamp", when present, must
// be an RFC 3339 time and "object", when present, needs a string "id" and a
// positive integer "version" (or no version).
func decodePayload(body []byte, ev *Event) error {
	var p struct {
		Type      *string `json:"type"`
		Timestamp *string `json:"timestamp"`
		Object    *struct {
			ID      *string         `json:"id"`
			Version json.RawMessage `json:"version"`
		} `json:"object"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf(`%w: want a JSON object like {"type":"invoice.paid","timestamp":"…","data":{…}}: %v`, errMalformedPayload, err)
	}
	if p.Type == nil || *p.Type == "" {
		return fmt.Errorf(`%w: "type" is missing or empty`, errMalformedPayload)
	}
	if strings.ContainsRune(*p.Type, 0) {
		return fmt.Errorf(`%w: "type" contains a NUL character`, errMalformedPayload)
	}
	ev.Type = *p.Type
	ev.Timestamp = time.Time{}
	if p.Timestamp != nil {
		ts, err := time.Parse(time.RFC3339Nano, *p.Timestamp)
		if err != nil {
			return fmt.Errorf(`%w: "timestamp" %q is not an RFC 3339 time like "2026-12-02T12:00:00Z"`, errMalformedPayload, *p.Timestamp)
		}
		ev.Timestamp = ts
	}
	ev.ObjectID, ev.Version = "", 0
	if p.Object != nil {
		if p.Object.ID == nil || *p.Object.ID == "" {
			return fmt.Errorf(`%w: "object" has no string "id"`, errMalformedPayload)
		}
		if strings.ContainsRune(*p.Object.ID, 0) {
			return fmt.Errorf(`%w: "object.id" contains a NUL character`, errMalformedPayload)
		}
		ev.ObjectID = *p.Object.ID
		if len(p.Object.Version) > 0 && string(p.Object.Version) != "null" {
			v, err := strconv.ParseInt(string(p.Object.Version), 10, 64)
			if err != nil || v < 1 {
				return fmt.Errorf(`%w: "object.version" is %s; want a positive integer`, errMalformedPayload, p.Object.Version)
			}
			ev.Version = v
		}
	}
	ev.Data = p.Data
	ev.Payload = body
	return nil
}
