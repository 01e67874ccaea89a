// Package limits keeps one tenant from crowding out the others through the
// API and the portal: a cap on a tenant's endpoints (enforced by store when
// an endpoint is created) and rate limits on the actions that make the
// dispatcher work — publishing, resending, replaying and sending test
// events ([Action]).
//
// Every limit has a default, set by cmd/api's flags, and an override per
// tenant that only an operator sets (store.TenantLimits, PATCH
// /v1/tenants/{id}). A rate limit is a [Rate]: a burst that may be spent at
// once, refilled at PerSecond.
//
// Each rate-limited request is judged twice ([Limiter.Take]):
//
//   - by the credential that makes it (an API key, per tenant it acts on, or
//     a portal session), in this process, with golang.org/x/time/rate, at
//     [Config.CredentialShare] of the tenant's limit, so that one runaway
//     key or browser cannot spend its tenant's whole budget. It is judged
//     first and in memory: a credential over its limit costs the database
//     nothing. With N api replicas a credential may reach N times its
//     share, never more than its tenant's limit.
//   - by its tenant, across every api replica: one row per tenant and
//     action in herald.tenant_rate_limits holds a GCRA state that one
//     statement reads and advances under the row's lock, as
//     herald.endpoint_rate_limits does for deliveries (internal/ratelimit).
//     The tenant's override is read in the same statement, so a changed
//     limit applies to the next request.
//
// A request turned away by its tenant gives its credential's token back,
// and a request turned away by either is answered 429 with Retry-After.
//
// The GCRA: emission interval T = 1/PerSecond, tolerance (Burst−1)·T, tat
// the theoretical arrival time of the next request. A request at t with
// s = max(tat, t) is let through when s − t ≤ (Burst−1)·T, and then
// tat ← s + T; otherwise it waits s − (Burst−1)·T − t. A tenant idle for
// Burst·T has its whole burst again; over any window of length W at most
// Burst + W·PerSecond requests go through.
//
// Publishing with outbox.Publish or herald.publish in SQL is the
// producer's own transaction on its own connection and is not limited:
// only the API's publish route is.
package limits
