-- How many of a completed replay's deliveries were pending when its job
-- last looked.
--
-- A replay's progress counts its deliveries still pending among its
-- endpoint's pending deliveries (deliveries_pending). Once they have all
-- settled that count finds nothing, but it reads every index entry the
-- replay's deliveries left in deliveries_pending while they were pending,
-- until vacuum removes them: on the aged bench scenario the portal's
-- endpoint page, which shows the latest replays, took 2.1 s the first time
-- it was opened after a replay of 100,000 drained (docs/benchmarks.md).
-- The replay's job now watches the drain after its walk (replay.Worker),
-- writing the count it finds into pending and the time into pending_at,
-- until it finds none; readers of a completed replay take its progress
-- from there instead of counting. A delivery of the replay sent again
-- after the watch ended (a resend) does not take the progress back.
ALTER TABLE herald.replays
    ADD COLUMN pending integer,
    ADD COLUMN pending_at timestamptz;
