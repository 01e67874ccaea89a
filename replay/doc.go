// Package replay sends messages again: Resend re-sends one message to one
// endpoint at once, and Start launches a replay of everything an endpoint
// was sent (or only what failed or was skipped) in a time range: the
// endpoint's deliveries created in it, which is when their messages were
// fanned out.
//
// Both keep the message's webhook-id, so a receiver that already processed
// a message dedupes it. Both queue ordinary delivery jobs (package
// delivery) in the caller's transaction; the attempts they make are
// recorded with the trigger "manual" or "replay". Each requeues its
// delivery: sets it pending, due now, with a fresh retry window and
// schedule, and moves it to its next generation, which fences out the jobs
// queued for it before (see delivery.Args.Generation), so one job at a time
// works a delivery. Resend requeues a pending delivery too, which brings
// its next attempt forward to now; a replay counts a pending delivery
// without queueing it, so a second replay is harmless.
//
// A replay is a row in herald.replays walked by a River job (Args, run by
// Worker in the dispatcher) in batches, each batch one transaction that
// queues its deliveries and advances the replay's cursor. A replay therefore
// survives restarts of the api and the dispatcher: River runs the job again
// and it resumes after the last committed batch.
package replay
