// Package receiver turns at-least-once webhook delivery into exactly-once
// effects for the consumer of Herald's webhooks, or of any Standard
// Webhooks sender.
//
// Every sender delivers some webhooks twice: a response lost after the
// consumer committed, a retry after a 5xx, a manual resend days later, two
// copies arriving at the same moment. A consumer therefore needs four
// things, each of which this package provides:
//
//  1. Verify the signature on the raw body before trusting anything
//     ([Verify], [VerifyMiddleware], and the [Handler]).
//  2. Store the event durably, then answer 200, and do the work from a
//     queue: the [Handler] inserts into an inbox table, and a [Worker]
//     leases due events, then applies each in the transaction that marks
//     it processed, retrying failures and setting aside dead letters
//     ([ListDeadLetters], [Redrive]), also for an event that kills the
//     process handling it.
//  3. Deduplicate with a unique key committed with the side effect: the
//     inbox's UNIQUE (source, webhook_id), or [Claim] for consumers that
//     apply effects inside the request.
//  4. Order updates of one object by a version, never by a timestamp
//     ([ApplyIfNewer]), and keep keys longer than the sender can resend
//     ([Prune], 30 days by default).
//
// # Serving
//
// Serve the Handler with an http.Server that bounds every phase of a
// request. http.ListenAndServe sets no timeout at all: a sender that
// trickles its body would hold a connection, a goroutine and up to the
// body limit in memory for as long as it likes.
//
//	server := &http.Server{
//		Addr:              ":8080",
//		Handler:           handler,
//		ReadHeaderTimeout: 10 * time.Second,
//		ReadTimeout:       30 * time.Second, // the body too; Herald gives up on an attempt after 15 s
//		WriteTimeout:      30 * time.Second,
//		IdleTimeout:       2 * time.Minute, // longer than Herald keeps an idle connection (90 s)
//	}
//	log.Fatal(server.ListenAndServe())
//
// # Tables
//
// [Migrate] creates the tables in the schema webhook_inbox of the
// consumer's own database, so that the inbox row, the consumer's side
// effects and the processed mark commit in one transaction:
//
//   - events: the inbox, UNIQUE (source, webhook_id), with the raw payload,
//     received_at, attempts, last_error, next_attempt_at, processed_at and
//     dead_at, and the lease: leases, lease_expires_at and leased_alone;
//   - claims: the keys taken by Claim;
//   - object_versions: the versions recorded by ApplyIfNewer;
//   - schema_migrations: which of the package's migrations ran.
//
// Source names a sender, or a tenant of a multi-tenant consumer: webhook IDs
// are unique only per source. Mount one Handler per source.
//
// # Leases
//
// A Worker claims a batch of due events with FOR UPDATE SKIP LOCKED and
// leases them: it counts an attempt on each, moves next_attempt_at to the
// end of the lease (WorkerConfig.LeaseDuration, 1 min by default) and
// commits, before it applies any. Each event is then applied in its own
// transaction, whose first statement marks it processed if the lease is
// still this worker's; the handler's effects commit with that mark, and a
// success takes the counted attempt back.
//
// The lease exists for the handler that kills its process (os.Exit, a
// crash, running out of memory). Were the claim, the effects and the mark
// one transaction, the death would roll the claim back with the rest: no
// attempt counted, the same event claimed first again, and every process
// that starts would die on it. With the lease the attempt is already
// committed, and after LeaseDuration the event is claimable again. Since
// a batch's death does not say which of its events caused it, the events
// of a lapsed batch lease are retried one per lease, with their attempt
// taken back; the death of a lease held alone is the event's own, and after
// MaxAttempts of them (with any failures) the event is a dead letter. The
// events behind it keep flowing meanwhile, and none is applied twice: a
// worker whose lease was taken over applies nothing.
//
// A Worker that stops, or whose database connection breaks, hands the events
// it did not apply back at once, uncharged.
//
// # Retention
//
// Prune deletes processed events and claims older than the retention (30
// days by default, never less than 7). A Worker runs it every hour; a
// consumer that runs no Worker calls Prune from a daily job instead.
//
// # Versions in the consumer's own table
//
// ApplyIfNewer keeps versions in a table of its own. When the consumer's
// row already carries the version, the guard is the update itself:
//
//	tag, err := tx.Exec(ctx,
//		`UPDATE accounts SET plan = $2, plan_version = $3 WHERE id = $1 AND plan_version < $3`,
//		ev.ObjectID, plan, ev.Version)
//	// tag.RowsAffected() == 0: the event is stale; return nil so it is marked processed.
//
// Either way the comparison is strict: an equal version is the same update
// again.
package receiver
