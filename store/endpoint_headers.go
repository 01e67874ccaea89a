package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/net/http/httpguts"
)

// Limits on an endpoint's custom headers.
const (
	// MaxEndpointHeaders is the most custom headers an endpoint has: 20.
	MaxEndpointHeaders = 20
	// MaxEndpointHeaderBytes bounds the custom headers of an endpoint
	// together, names and values: 8 KiB, well within what servers accept
	// in a whole request head (commonly 8 to 16 KiB, Herald's own headers
	// included).
	MaxEndpointHeaderBytes = 8 << 10
)

// MaskedHeaderValue stands for a secret header's value wherever an
// endpoint is shown: the value is encrypted at rest and never read back.
const MaskedHeaderValue = "********"

// EndpointHeader is a custom header sent on every attempt to an endpoint.
type EndpointHeader struct {
	// Name is the header's name, as its owner wrote it (HTTP compares
	// names without regard to case).
	Name string
	// Value is the header's value. A secret header read from the store has
	// MaskedHeaderValue instead.
	Value string
	// Secret marks a value stored encrypted, like signing secrets, and
	// never shown again.
	Secret bool
}

// forbiddenHeaders are the names Herald sets itself or that describe the
// connection rather than the request (the hop-by-hop headers of RFC 9110,
// section 7.6.1, and their predecessors): a custom header may not set them.
// Authorization belongs to the endpoint's authentication (package
// endpointauth), whose token the worker would otherwise write over a
// custom one, or send beside it when the endpoint has none; refusing it
// always, not only beside an authentication, leaves one place to set it.
var forbiddenHeaders = map[string]string{
	"authorization":       "set it as the endpoint's authentication (bearer, basic or oauth2_client_credentials), which keeps it encrypted",
	"host":                "Herald sets it from the endpoint's URL",
	"content-length":      "Herald sets it from the payload",
	"content-type":        "Herald sends application/json",
	"transfer-encoding":   "it is hop-by-hop",
	"connection":          "it is hop-by-hop",
	"keep-alive":          "it is hop-by-hop",
	"proxy-connection":    "it is hop-by-hop",
	"proxy-authenticate":  "it is hop-by-hop",
	"proxy-authorization": "it is hop-by-hop",
	"te":                  "it is hop-by-hop",
	"trailer":             "it is hop-by-hop",
	"upgrade":             "it is hop-by-hop",
	"user-agent":          "Herald names itself in it",
}

// storedHeader is one element of herald.endpoints.headers
// (migrations/0039_endpoint_headers_and_policy.sql).
type storedHeader struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Secret bool   `json:"secret,omitempty"`
	// Sealed is the secret value sealed under the store's box (bound to the
	// endpoint and the name), base64 in JSON.
	Sealed []byte `json:"sealed,omitempty"`
}

// headerAAD binds a sealed header value to its endpoint and name: copied to
// another endpoint or header, it does not open.
func headerAAD(endpointID uuid.UUID, name string) []byte {
	aad := append([]byte("herald endpoint header\x00"), endpointID[:]...)
	return append(aad, strings.ToLower(name)...)
}

// checkHeaders refuses headers over the limits, with a name that is not a
// valid HTTP field name or one Herald keeps for itself (forbiddenHeaders,
// webhook-*), a repeated name, or a value that cannot be sent. A secret
// header with an empty value is allowed only when keep says a stored
// value of that name may be kept (an update).
func checkHeaders(headers []EndpointHeader, keep func(name string) bool) error {
	if len(headers) > MaxEndpointHeaders {
		return invalid("headers", "has %d headers; an endpoint has at most %d", len(headers), MaxEndpointHeaders)
	}
	total := 0
	seen := make(map[string]bool, len(headers))
	for _, h := range headers {
		lower := strings.ToLower(h.Name)
		switch {
		case h.Name == "":
			return invalid("headers", "has a header without a name; name it, for example X-Api-Key")
		case !httpguts.ValidHeaderFieldName(h.Name):
			return invalid("headers", "%s is not a valid header name; use letters, digits and !#$%%&'*+-.^_`|~, for example X-Api-Key", strconv.Quote(h.Name))
		case strings.HasPrefix(lower, "webhook-"):
			return invalid("headers", "%s is refused: the webhook-* headers are Herald's signature headers (Standard Webhooks); choose another name", strconv.Quote(h.Name))
		case forbiddenHeaders[lower] != "":
			return invalid("headers", "%s is refused: %s; remove it", strconv.Quote(h.Name), forbiddenHeaders[lower])
		case seen[lower]:
			return invalid("headers", "%s appears twice (names are compared without regard to case); send each header once", strconv.Quote(h.Name))
		case h.Value == "" && h.Secret && keep != nil && keep(h.Name):
		case h.Value == "":
			return invalid("headers", "%s has an empty value; give a value, or remove the header", strconv.Quote(h.Name))
		case !httpguts.ValidHeaderFieldValue(h.Value):
			return invalid("headers", "%s has a value that cannot be sent in HTTP (a control character or line break); remove it", strconv.Quote(h.Name))
		case strings.TrimSpace(h.Value) != h.Value:
			return invalid("headers", "%s has white space around its value, which HTTP would drop; remove it", strconv.Quote(h.Name))
		}
		seen[lower] = true
		total += len(h.Name) + len(h.Value)
	}
	if total > MaxEndpointHeaderBytes {
		return invalid("headers", "add up to %d bytes of names and values; at most %d are allowed", total, MaxEndpointHeaderBytes)
	}
	return nil
}

// sealHeaders turns headers into the headers column of endpointID, sealing
// secret values. A secret header without a value keeps kept's sealed value
// of that name.
func (s *Store) sealHeaders(endpointID uuid.UUID, headers []EndpointHeader, kept map[string][]byte) ([]byte, error) {
	stored := make([]storedHeader, len(headers))
	for i, h := range headers {
		stored[i] = storedHeader{Name: h.Name, Value: h.Value}
		if h.Secret {
			stored[i] = storedHeader{Name: h.Name, Secret: true, Sealed: kept[strings.ToLower(h.Name)]}
			if h.Value != "" {
				stored[i].Sealed = s.box.Seal([]byte(h.Value), headerAAD(endpointID, h.Name))
			}
		}
	}
	return json.Marshal(stored)
}

// decodeHeaders reads a headers column. Secret values stay sealed.
func decodeHeaders(column []byte) ([]storedHeader, error) {
	var stored []storedHeader
	if err := json.Unmarshal(column, &stored); err != nil {
		return nil, fmt.Errorf("stored headers: %w", err)
	}
	return stored, nil
}

// shownHeaders is a headers column as an Endpoint shows it: secret values
// masked. Never nil.
func shownHeaders(column []byte) ([]EndpointHeader, error) {
	stored, err := decodeHeaders(column)
	if err != nil {
		return nil, err
	}
	out := make([]EndpointHeader, len(stored))
	for i, h := range stored {
		out[i] = EndpointHeader{Name: h.Name, Value: h.Value, Secret: h.Secret}
		if h.Secret {
			out[i].Value = MaskedHeaderValue
		}
	}
	return out, nil
}

// keptSecrets reads endpointID's sealed header values by lower-case name,
// for an update that keeps some of them.
func (s *Store) keptSecrets(ctx context.Context, db dbtx, endpointID uuid.UUID) (map[string][]byte, error) {
	var column []byte
	err := db.QueryRow(ctx, selectEndpointHeaders, endpointID).Scan(&column)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	stored, err := decodeHeaders(column)
	if err != nil {
		return nil, err
	}
	kept := make(map[string][]byte)
	for _, h := range stored {
		if h.Secret {
			kept[strings.ToLower(h.Name)] = h.Sealed
		}
	}
	return kept, nil
}

// SendHeaders turns endpointID's stored headers column into the headers
// to send, secret values decrypted, and the names of the secret ones. It
// implements delivery.HeaderSource: the delivery worker calls it for every
// attempt, and it reads nothing from the database. Its errors never
// contain a value.
func (s *Store) SendHeaders(endpointID uuid.UUID, column []byte) (http.Header, []string, error) {
	stored, err := decodeHeaders(column)
	if err != nil {
		return nil, nil, fmt.Errorf("headers of endpoint %s: %w", endpointID, err)
	}
	out := make(http.Header, len(stored))
	var secret []string
	for _, h := range stored {
		value := h.Value
		if h.Secret {
			plain, err := s.box.Open(h.Sealed, headerAAD(endpointID, h.Name))
			if err != nil {
				return nil, nil, fmt.Errorf("decrypt header %s of endpoint %s: %w", h.Name, endpointID, err)
			}
			value = string(plain)
			secret = append(secret, h.Name)
		}
		out.Set(h.Name, value)
	}
	return out, secret, nil
}
