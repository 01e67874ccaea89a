-- A worker leases the events it claims and commits the lease before it
-- applies them, so that an event whose handler kills the process is counted
-- and ends as a dead letter instead of being claimed again forever (see
-- lease.go). While an event is leased, next_attempt_at is the end of its
-- lease: the claim query and events_pending_idx need no change.
--
-- leases counts the leases taken on the event; the current one's number
-- fences the holder's statements, so a worker whose lease lapsed and was
-- taken over can no longer mark, fail or release the event.
-- lease_expires_at is when the outstanding lease ends; NULL when none is
-- outstanding. A due event with one is an event whose worker died.
-- leased_alone says that lease holds only this event: a lapse of it is
-- charged to the event, a lapse of a batch's lease is not.
ALTER TABLE webhook_inbox.events
    ADD COLUMN leases integer NOT NULL DEFAULT 0,
    ADD COLUMN lease_expires_at timestamptz,
    ADD COLUMN leased_alone boolean NOT NULL DEFAULT false;
