// Package deliverylog is the one read model of Herald's delivery log: the
// messages a tenant published, their deliveries (one per message and
// endpoint) and the HTTP attempts made for them. The management API (package
// api) and the customer portal (package portal) both read the log through
// it, each turning its rows into its own JSON or page.
//
// Every function takes the tenant whose log it reads and filters on it, so
// an id of another tenant's message, delivery, endpoint or attempt finds
// nothing: a single object is then ErrNotFound and a list is empty.
//
// Lists of messages and attempts are newest first and keyset-paged with
// package page on (created_at, id) and (started_at, id); a cursor whose id is
// not a UUID is page.ErrInvalidCursor. Every query on the log's tables walks
// an index from the tenant, message, endpoint or id it is given, and every
// list is bounded: by its page size or limit, or by what one message has
// (its deliveries, their attempts). queries.go names the index each query
// walks.
//
// The functions take a DB, so they run on a pool or inside the caller's
// transaction (the API reads a message back in the transaction that
// published it).
package deliverylog
