package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// APIError is an answer of the API other than 2xx: its problem document
// (RFC 9457), or what stood in for one when the answer was not a problem.
type APIError struct {
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Type identifies the kind of problem, e.g. "urn:herald:problem:validation".
	Type string `json:"type"`
	// Title is a short summary of the kind of problem.
	Title string `json:"title"`
	// Detail is the sentence to act on.
	Detail string `json:"detail"`
	// Field names the request field or query parameter at fault, when one is.
	Field string `json:"field,omitempty"`
	// RequestID matches the api's log line for the request.
	RequestID string `json:"request_id,omitempty"`
}

// Error is the problem's sentence, with the field at fault when there is one.
func (e *APIError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (field %s)", e.Detail, e.Field)
	}
	return e.Detail
}

// UnreachableError is a request that got no answer from the API: the
// address is wrong, the api is down, or the connection broke.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the api at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// problemFrom reads a non-2xx answer.
func problemFrom(resp *http.Response, raw []byte) error {
	p := &APIError{}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") && json.Unmarshal(raw, p) == nil && p.Detail != "" {
		p.Status = resp.StatusCode
		return p
	}
	detail := strings.TrimSpace(string(raw))
	if len(detail) > 200 {
		detail = detail[:200] + "…"
	}
	if detail == "" {
		detail = "the api answered " + resp.Status + " with no explanation"
	}
	return &APIError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: detail}
}

// IsNotFound reports whether err is the API's 404: the object does not
// exist or the key may not see it.
func IsNotFound(err error) bool {
	var p *APIError
	return errors.As(err, &p) && p.Status == http.StatusNotFound
}
