// Package store keeps Herald's tenants and endpoints: who receives webhooks,
// where, for which event types, and with which signing secrets.
//
// A tenant is one customer of the SaaS team running Herald; its id is chosen
// by the producer. An endpoint is one URL a tenant receives webhooks at. It
// subscribes to a list of event types (empty means every type), can be
// disabled with a reason, and signs with one or more secrets: one normally,
// two while a rotation's grace period runs.
//
// Secrets are encrypted at rest with the operator key (see
// internal/secretbox) and bound to their endpoint. An Endpoint value never
// carries a secret; RevealSecret and ActiveSecrets are the only ways to read
// one.
//
// Every write has a Tx twin (CreateEndpoint / CreateEndpointTx) that runs
// in the caller's transaction, so a producer can, for example, create a
// tenant in the same transaction as its own customer record.
//
// Endpoint ids are global: a caller acting for one tenant (the API, the
// portal) checks Endpoint.TenantID before acting on an endpoint by id.
//
// Deleting is not the store's: package erasure marks a tenant or endpoint
// deleted at once and erases its history in the background. A tenant or
// endpoint so marked is not found by any method of the store.
//
// Errors are a *ValidationError for bad input (naming the field) or wrap
// ErrNotFound or ErrAlreadyExists, so callers branch with errors.As and
// errors.Is.
package store
