// Package chaos runs Herald end to end under faults and checks that no
// event is lost or applied twice.
//
// Producers publish events about a set of objects through the outbox, in
// transactions that also change the producer's own rows; some of them roll
// back. Two dispatcher processes, built from cmd/dispatcher and started as
// real subprocesses, fan the events out and deliver them to three endpoints of
// a consumer built on package receiver: its Handler stores into the inbox,
// and a separate worker process (the calling program run again, see
// [RunConsumerWorker]) applies the inbox to a ledger and to version-guarded
// objects. The consumer's endpoint misbehaves at chosen rates: it answers
// 500, holds the request past the sender's timeout, stores the event and
// then drops the connection, or stores it and answers only after the sender
// gave up.
//
// Meanwhile the run SIGKILLs a dispatcher several times and starts it
// again; breaks every database connection once, as a Postgres restart does
// (see [Outage]; cmd/chaos restarts a [PrivateServer] for real); lets the
// second endpoint answer 410 Gone, then enables it and replays it with
// only_failed; resends pending deliveries; ends delivery jobs by force for
// the reconciler to repair; black-holes one dispatcher's database
// connections (package internal/blackhole); and makes one event kill the
// consumer's worker process whenever it is applied.
//
// When everything has settled, [Run] checks the end state and returns a
// [Report]: every committed event applied exactly once by the consumer
// (the poison event aside, which must be a dead letter), nothing of a
// rolled-back transaction ever sent, every object at its latest version, no
// delivery left pending, no delivery with two requests in flight at the
// consumer at once, what the run did to Herald repaired (the replay
// completed, the resent and the forced deliveries delivered, the
// black-holed dispatcher working again within dispatcher.RecoveryBound), and
// every request the consumer saw matched to a row of the dispatchers'
// attempt log with the outcome the consumer's answer calls for, or else to
// the error River recorded on the job that sent it and could not record it
// (its process was killed, or the database went away).
//
// The test of this package runs a small configuration on every make test;
// cmd/chaos runs the full one.
package chaos
