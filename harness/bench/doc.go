// Package bench measures Herald end to end on one machine: producers
// publish through outbox.Publish, the dispatcher fans out and delivers, and
// receivers on loopback answer; the bench reports how many events moved, how
// fast, how late, and what it cost.
//
// Every scenario runs on a fresh migrated database. Receivers listen on
// 127.0.0.1, one port per endpoint, and record when each request's handler
// started; producers record when each commit returned; the message id in the
// webhook-id header links the two, so latency is measured from the
// producer's commit to the receiver's arrival on one monotonic clock.
// Postgres's own counters (pg_stat_database, the WAL position) give the rows
// and bytes written per delivery, and the dispatcher's CPU time and peak RSS
// come from getrusage (in-process) or /proc and wait4 (a subprocess).
//
// The baseline scenario pushes the same number of no-op River jobs through
// the same database, so Herald's rate can be read as a share of the queue's
// own limit on the same machine at the same moment.
//
// The command is cmd/bench (make bench); the numbers and what they mean are
// in docs/benchmarks.md.
package bench
