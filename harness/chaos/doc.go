// Package chaos runs Herald end to end under faults and checks that no
// event is lost or applied twice.
//
// Producers publish events about a set of objects through the outbox, in
// transactions that also change the producer's own rows; some of them roll
// back. Two dispatcher processes, built from cmd/dispatcher and started as
// real subprocesses, fan the events out and deliver them to one endpoint: a
// consumer built on package receiver (a Handler storing into its inbox and
// Workers applying the inbox to a ledger and to version-guarded objects).
// The consumer's endpoint misbehaves at chosen rates: it answers 500, holds
// the request past the sender's timeout, stores the event and then drops
// the connection, or stores it and answers only after the sender gave up.
// Meanwhile the run SIGKILLs a dispatcher several times and starts it again,
// and breaks every database connection once, as a Postgres restart does
// (see [Outage]).
//
// When everything has settled, [Run] checks the end state and returns a
// [Report]: every committed event applied exactly once by the consumer,
// nothing of a rolled-back transaction ever sent, every object at its latest
// version, no delivery left pending, and every request the consumer saw
// matched to a row of the dispatchers' attempt log with the outcome the
// consumer's answer calls for, or else to the error River recorded on the
// job that sent it and could not record it (its process was killed, or the
// database went away).
//
// The test of this package runs a small configuration on every make test;
// cmd/chaos runs the full one.
package chaos
