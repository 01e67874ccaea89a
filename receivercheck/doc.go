// Package receivercheck tests an endpoint's receiver before it goes live:
// it sends the endpoint the situations at-least-once delivery produces, as
// signed herald.test events, and records how the endpoint answered each,
// with what its owner should verify on their side. Four steps, from the
// reference article's pre-launch checklist:
//
//  1. StepDuplicate: one event sent twice in a row (same webhook-id).
//  2. StepConcurrent: two copies of one event sent at the same moment.
//  3. StepShuffled: ShuffledVersions versions of one object, sent one at
//     a time out of order (ShuffledOrder), the latest not last.
//  4. StepOldEvent: the first event of this endpoint's newest check that
//     is OldEventAge (a day) old or more, sent again; skipped when there
//     is none yet.
//
// Herald sees only the answers: a step succeeds when every copy got a 2xx.
// Whether the side effect happened once, or the object ended at its latest
// version, only the receiver knows; each step says what to look at, and
// OwnerChecks lists the checks Herald cannot send.
//
// Start (in the caller's transaction) publishes the events through the
// outbox, marked dispatched so they are not fanned out, stores the check
// and queues its job; the dispatchers' Worker sends them through
// delivery.Worker.Probe, so every request is signed and guarded like a
// delivery. A check records no attempts and changes no endpoint's health.
package receivercheck
