// Package deliverystatus is the one vocabulary for the state of a delivery:
// the values of herald.deliveries.status (migrations/0001_core.sql), which
// the dispatcher writes, replay and resend change, and the API and the
// portal show and filter by.
package deliverystatus

import (
	"fmt"
	"strings"
)

// Status is the state of one delivery of a message to an endpoint.
type Status string

// The states of a delivery. Only Pending is unsettled: every other state
// is final until a resend or replay sets the delivery pending again.
const (
	// Pending: queued, or waiting for a retry.
	Pending Status = "pending"
	// Succeeded: an attempt got a 2xx.
	Succeeded Status = "succeeded"
	// Failed: the retry window was spent (exhausted) or the endpoint
	// answered 410 Gone.
	Failed Status = "failed"
	// Cancelled: the endpoint was disabled or deleted before the delivery
	// was sent.
	Cancelled Status = "cancelled"
	// Skipped: the endpoint was disabled when the message was fanned out; a
	// replay after enabling it sends it.
	Skipped Status = "skipped"
)

// All lists every state, in the order they are shown to people.
func All() []Status {
	return []Status{Pending, Succeeded, Failed, Cancelled, Skipped}
}

// Valid reports whether s is one of [All].
func (s Status) Valid() bool {
	for _, v := range All() {
		if s == v {
			return true
		}
	}
	return false
}

// Parse returns the state named s, or an error that lists the valid names.
func Parse(s string) (Status, error) {
	if st := Status(s); st.Valid() {
		return st, nil
	}
	names := make([]string, 0, len(All()))
	for _, v := range All() {
		names = append(names, string(v))
	}
	return "", fmt.Errorf("unknown delivery status %q; use one of %s", s, strings.Join(names, ", "))
}
