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

// ErrBeingErased is wrapped by errors about creating a tenant whose id
// belongs to a tenant being erased (package erasure): the id is free again
// once the erasure completes.
var ErrBeingErased = errors.New("a tenant with this id is being erased")

// ErrEndpointLimit is wrapped by the *EndpointLimitError of an endpoint
// that CreateEndpoint refused because its tenant is at its cap.
var ErrEndpointLimit = errors.New("the tenant has as many endpoints as its cap allows")

// EndpointLimitError is CreateEndpoint's refusal of an endpoint beyond its
// tenant's cap.
type EndpointLimitError struct {
	TenantID string
	// Count is the tenant's number of endpoints, Max its cap.
	Count, Max int
	// Own is true when the cap is the tenant's own (set by an operator),
	// false when it is the default.
	Own bool
}

func (e *EndpointLimitError) Error() string {
	which := "the default cap"
	if e.Own {
		which = "its own cap"
	}
	return fmt.Sprintf("tenant %q has %d endpoints and %s is %d", e.TenantID, e.Count, which, e.Max)
}

func (e *EndpointLimitError) Unwrap() error { return ErrEndpointLimit }

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
