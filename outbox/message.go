package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// NotifyChannel is the Postgres channel a publish notifies when its
// transaction commits, unless another publish notified within the last
// NotifyWindow. The dispatcher LISTENs on it, drains once more after the
// window to find the publishes that did not notify, and polls as a
// fallback.
const NotifyChannel = "herald_outbox"

// NotifyWindow is how long after a publish notified NotifyChannel other
// publishes do not: 10 ms, herald.wake_dispatcher's window
// (migrations/0019_publish_many.sql). Notifying commits take a cluster-wide
// lock until they are durable, so at most one publish notifies per window
// however many commit.
const NotifyWindow = 10 * time.Millisecond

// DefaultMaxPayloadBytes is the largest serialized Data accepted by default:
// 256 KiB. Operators change the limit with the Postgres setting
// herald.max_payload_bytes, for example
// ALTER DATABASE herald SET herald.max_payload_bytes = '1048576'.
const DefaultMaxPayloadBytes = 256 << 10

// Message is one event to publish.
type Message struct {
	// Tenant is the id of the tenant whose endpoints receive the event. The
	// tenant must exist.
	Tenant string
	// Type names the event, for example "invoice.paid": 1 to 128 characters,
	// lower-case letters, digits, ".", "_" and "-", starting with a letter or
	// a digit. Endpoints subscribe to types.
	Type string
	// ObjectID identifies the object the event is about, 1 to 256
	// characters. Versions count per (Tenant, ObjectID).
	ObjectID string
	// Data is the event's payload. It is encoded with encoding/json and must
	// encode to a JSON object: a struct, a map, or a json.RawMessage holding
	// an object. Its serialized size may be at most the payload limit
	// (DefaultMaxPayloadBytes unless the operator changed it).
	Data any
	// IdempotencyKey, when not empty, makes the publish happen at most once
	// per tenant: publishing the same key again returns the first message
	// and its version, publishes nothing and bumps no version. At most 256
	// characters. Empty means no key.
	IdempotencyKey string
	// Channels label the message for routing within its tenant: an
	// endpoint that subscribes to channels receives only messages carrying
	// one of them, and an endpoint without channels receives every message,
	// with or without channels. At most MaxChannels, each a name that
	// ValidateChannel accepts; repeats are dropped. Empty means none.
	Channels []string
}

// Published describes a published message.
type Published struct {
	// ID is the message's id, a time-ordered UUID (version 7). Receivers see
	// it as the webhook-id header "msg_<ID>".
	ID uuid.UUID
	// Version is the object's version the message carries.
	Version int64
	// Duplicate is true when the idempotency key had been published before;
	// ID, Version and CreatedAt are then the first message's.
	Duplicate bool
	// CreatedAt is when the message was published, by Postgres's clock.
	CreatedAt time.Time
	// Body is the exact JSON Herald sends for the message, fixed at
	// publish time. Nil for a duplicate.
	Body json.RawMessage
}

// ValidationError is returned for a message that cannot be published. The
// producer's transaction is left usable.
type ValidationError struct {
	// Field is the message field at fault: "tenant", "type", "object_id",
	// "data", "idempotency_key" or "channels"; "events" for a batch of more than
	// MaxBatch messages.
	Field string
	// Problem says what is wrong and how to fix it.
	Problem string
}

func (e *ValidationError) Error() string {
	return e.Field + " " + e.Problem
}

// encode checks what Postgres would reject while binding parameters (text
// that is not UTF-8 or holds NUL bytes), since such an error would abort the
// producer's transaction, and returns Data as JSON text. Everything else is
// checked by herald.try_publish.
func (m Message) encode() (string, error) {
	fields := []struct{ name, value string }{
		{"tenant", m.Tenant},
		{"type", m.Type},
		{"object_id", m.ObjectID},
		{"idempotency_key", m.IdempotencyKey},
	}
	for _, f := range fields {
		if !utf8.ValidString(f.value) {
			return "", &ValidationError{Field: f.name, Problem: "is not valid UTF-8"}
		}
		if strings.IndexByte(f.value, 0) >= 0 {
			return "", &ValidationError{Field: f.name, Problem: "contains a NUL byte"}
		}
	}
	if err := ValidateChannels(m.Channels); err != nil {
		return "", &ValidationError{Field: "channels", Problem: err.Error()}
	}
	if m.Data == nil {
		return "", &ValidationError{Field: "data", Problem: "is missing; pass a JSON object, for example map[string]any{}"}
	}
	data, err := json.Marshal(m.Data)
	if err != nil {
		return "", &ValidationError{Field: "data", Problem: fmt.Sprintf("cannot be encoded as JSON: %v", err)}
	}
	if !utf8.Valid(data) {
		return "", &ValidationError{Field: "data", Problem: "is not valid UTF-8"}
	}
	return string(data), nil
}

// MaxTypeLength is the longest event type accepted, in characters.
const MaxTypeLength = 128

// ValidateType checks an event type against the grammar Publish enforces
// (the same rule as herald.publish): 1 to 128 characters, lower-case
// letters, digits, ".", "_" and "-", starting with a letter or a digit. The
// error says what is wrong. Endpoint subscriptions use it too.
func ValidateType(eventType string) error {
	switch {
	case eventType == "":
		return errors.New("is empty; name the event, for example invoice.paid")
	case utf8.RuneCountInString(eventType) > MaxTypeLength:
		return fmt.Errorf("is %d characters long; at most %d are allowed", utf8.RuneCountInString(eventType), MaxTypeLength)
	}
	for i, c := range []byte(eventType) {
		lowerOrDigit := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !lowerOrDigit && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("%s is malformed; use lower-case letters, digits, \".\", \"_\" and \"-\", starting with a letter or digit, for example invoice.paid", quoteJSON(eventType))
		}
	}
	return nil
}

// MaxChannels is the most channels a message carries: 10, as
// herald.channels_problem (migrations/0034_channels_and_filters.sql)
// checks.
const MaxChannels = 10

// MaxChannelLength is the longest channel name, in characters: 128.
const MaxChannelLength = 128

// ValidateChannel checks a channel name against the rule herald.publish
// enforces: 1 to MaxChannelLength letters, digits, "_", ".", ":" and "-".
// Case matters. The error says what is wrong, in herald.publish's words.
// Endpoint subscriptions use it too.
func ValidateChannel(channel string) error {
	ok := channel != "" && len(channel) <= MaxChannelLength
	for i := 0; ok && i < len(channel); i++ {
		c := channel[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%s is not a channel name; use 1 to %d letters, digits, \"_\", \".\", \":\" and \"-\", for example project-1", quoteJSON(channel), MaxChannelLength)
	}
	return nil
}

// ValidateChannels checks a message's channels as herald.publish does: at
// most MaxChannels, each accepted by ValidateChannel.
func ValidateChannels(channels []string) error {
	if len(channels) > MaxChannels {
		return fmt.Errorf("holds %d channels; a message carries at most %d", len(channels), MaxChannels)
	}
	for _, c := range channels {
		if err := ValidateChannel(c); err != nil {
			return err
		}
	}
	return nil
}

// quoteJSON quotes s as Postgres's to_json does, so Go and SQL errors match.
func quoteJSON(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}
