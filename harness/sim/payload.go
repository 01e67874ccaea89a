package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event types on the wire.
const (
	typeCredited    = "account.credited"
	typePlanChanged = "account.plan_changed"
)

// payload is Herald's wire format: the object's id and version sit inside
// the signed body, so a receiver can trust them for its version guard.
type payload struct {
	Type      string        `json:"type"`
	Timestamp time.Time     `json:"timestamp"`
	Object    payloadObject `json:"object"`
	Data      payloadData   `json:"data"`
}

type payloadObject struct {
	ID      string `json:"id"`
	Version int64  `json:"version,omitempty"`
}

type payloadData struct {
	Account int    `json:"account"`
	Credits int64  `json:"credits,omitempty"`
	Plan    string `json:"plan,omitempty"`
}

// encode is the body every delivery of e carries.
func encode(e *Event) ([]byte, error) {
	p := payload{
		Timestamp: time.Unix(e.Created, 0).UTC(),
		Object:    payloadObject{ID: accountID(e.Account)},
		Data:      payloadData{Account: e.Account},
	}
	switch e.Kind {
	case Credit:
		p.Type, p.Data.Credits = typeCredited, e.Amount
	case Plan:
		p.Type, p.Object.Version, p.Data.Plan = typePlanChanged, e.Version, planName(e.Version)
	default:
		return nil, fmt.Errorf("encode %s: unknown event kind %d", e.ID, e.Kind)
	}
	return json.Marshal(p)
}

func planName(version int64) string { return fmt.Sprintf("plan_v%d", version) }

// message is a delivery as a handler sees it after verification.
type message struct {
	id      string // webhook-id: the event's stable ID
	kind    Kind
	object  string // "acct_0243", the version guard's object
	account int
	credits int64
	version int64
	plan    string
	created int64 // the payload's timestamp, whole seconds
}

var errBadPayload = errors.New("bad payload")

// decode reads a verified body. A client mistake gets an error that names
// the field, which the handler answers with 400.
func decode(id string, body []byte, accounts int) (message, error) {
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return message{}, fmt.Errorf("%w: %v", errBadPayload, err)
	}
	m := message{id: id, object: p.Object.ID, account: p.Data.Account, created: p.Timestamp.Unix()}
	if p.Data.Account < 0 || p.Data.Account >= accounts || p.Object.ID != accountID(p.Data.Account) {
		return message{}, fmt.Errorf("%w: data.account %d and object.id %q must name one of the %d accounts", errBadPayload, p.Data.Account, p.Object.ID, accounts)
	}
	switch p.Type {
	case typeCredited:
		if p.Data.Credits <= 0 {
			return message{}, fmt.Errorf("%w: data.credits must be positive", errBadPayload)
		}
		m.kind, m.credits = Credit, p.Data.Credits
	case typePlanChanged:
		if p.Object.Version < 1 || p.Data.Plan == "" {
			return message{}, fmt.Errorf("%w: a plan change needs object.version ≥ 1 and data.plan", errBadPayload)
		}
		m.kind, m.version, m.plan = Plan, p.Object.Version, p.Data.Plan
	default:
		return message{}, fmt.Errorf("%w: type %q is neither %s nor %s", errBadPayload, p.Type, typeCredited, typePlanChanged)
	}
	return m, nil
}
