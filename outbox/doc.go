// Package outbox is what producers import to publish events: Publish writes
// a message into Herald's outbox inside the producer's own transaction, so an
// event exists if and only if the business change it describes committed.
//
// Each message is about one object (an invoice, a user) and carries that
// object's version: versions per (tenant, object) start at 1 and rise by
// exactly 1 in commit order, also when many transactions publish for one
// object at once. Receivers use the version to ignore stale updates.
//
// The message body is fixed at publish time as the exact JSON Herald sends:
//
//	{"type":"invoice.paid","timestamp":"2026-12-02T12:00:00Z",
//	 "object":{"id":"inv_123","version":7},"data":{…}}
//
// Publishing is one SQL function, so producers in other languages publish
// the same way with plain SQL (see herald.publish in migrations/0003_outbox.sql):
//
//	SELECT * FROM herald.publish('acme', 'invoice.paid', 'inv_123', '{"amount": 4200}');
//
// A committed publish wakes the dispatcher with a NOTIFY on [NotifyChannel]
// unless another publish did within [NotifyWindow] (the dispatcher drains
// once more after the window; see herald.wake_dispatcher); nothing is sent
// for a transaction that rolls back.
//
// [PublishMany] publishes up to [MaxBatch] events in one statement, all or
// nothing; from SQL, herald.publish_many does the same:
//
//	SELECT * FROM herald.publish_many('acme', '[{"type": "invoice.paid", "object_id": "inv_123", "data": {}}]');
//
// # Split mode
//
// Every function here works unchanged on a producer's own database that
// holds only the outbox (package migrations/producer; install it with
// producer.Apply): the functions it calls have the same names there. The
// dispatcher relays each committed message into Herald's database (package
// relay, --source-database-url). Versions and idempotency keys then live
// in the producer's database, with the same guarantees, per database: publish
// an object through one database only. One check moves: the producer's
// database does not know Herald's tenants, so a publish for an unknown
// tenant succeeds there and the relay refuses the message (see
// docs/DESIGN.md, "Split mode").
package outbox
