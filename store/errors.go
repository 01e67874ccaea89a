package store

import (
	"errors"
	"fmt"
)

// ErrNotFound is wrapped by errors about a tenant, endpoint or secret that
// does not exist.
var ErrNotFound = errors.New("not found")

// ErrAlreadyExists is wrapped by errors about creating a tenant whose id is
// taken.
var ErrAlreadyExists = errors.New("already exists")

// ValidationError reports input the store refuses.
type ValidationError struct {
	// Field names the input at fault, as the API spells it: "id", "name",
	// "tenant_id", "url", "description", "event_types", "rate_limit",
	// "secret", "reason", "grace", "limit" or "after".
	Field string
	// Problem says what is wrong and how to fix it.
	Problem string
	// Err is the error behind Problem, if any: for a URL the URL policy
	// refused, its error (so errors.Is(err, ssrf.ErrBlocked) works).
	Err error
}

func (e *ValidationError) Error() string {
	return e.Field + ": " + e.Problem
}

func (e *ValidationError) Unwrap() error { return e.Err }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Problem: fmt.Sprintf(format, args...)}
}
