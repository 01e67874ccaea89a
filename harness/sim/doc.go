// Package sim reproduces the reference article's receiver experiments on
// Herald's own code, against real Postgres, with real concurrency.
//
// Four experiments, each a function returning its table:
//
//   - [RunHandlers]: 10,000 synthetic events over 500 accounts, sent over
//     HTTP on loopback (signed, Standard Webhooks) to six receiver designs —
//     naive, check-then-insert, atomic insert (receiver.Claim), ordering by
//     created >= and >, and the version guard (receiver.ApplyIfNewer) —
//     each with its own database. Faults: duplicates, lost responses,
//     concurrent pairs, shuffled order, same-second plan pairs.
//   - [RunCrash]: a receiver process that dies between the dedupe key and
//     the side effect; its Postgres connection is cut without a commit and
//     a new process takes over.
//   - [Retention]: dedupe keys kept 5 minutes to 30 days against the Svix,
//     Standard Webhooks and a 3-day schedule, and Herald's
//     schedule.Default().
//   - [Jitter]: 1,000 deliveries failing together against a receiver that
//     comes back at t=300 s, retried without jitter, with full jitter and
//     with Herald's policy; [WriteJitterSVG] draws the arrivals per second.
//
// [Run] runs them all; cmd/sim prints the result.
//
// The generator is the article's (mulberry32, seed 20261023), and every
// fault is drawn from a hash of (event, attempt, purpose) rather than from
// a shared sequence, so every design sees the same faults however its
// requests interleave, and the article's input is reproduced exactly. What
// differs from the article is the execution: its handlers shared one
// SQLite connection and overlapped only at an await, while here each
// request is its own goroutine and Postgres transaction. The handler table
// is therefore run twice: with one delivery in flight at a time (only a
// concurrent pair overlaps, as in the article) and with every delivery the
// plan's order allows in flight at once (see sender).
package sim
