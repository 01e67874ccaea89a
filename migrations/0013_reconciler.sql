-- The reconciler (dispatcher/reconcile.go) gives a new job to every pending
-- delivery whose job ended without settling it: River discarded it after its
-- attempts ran out, or it was cancelled. Such a delivery is otherwise
-- stranded for good: no job sends it, and resend and replay see it pending.
--
-- It walks the delivery jobs that ended badly through River's own index on
-- (state, finalized_at), from where it got to, kept here in one row: every
-- delivery job that was cancelled or discarded before examined_until has
-- been examined. A pass walks from there and moves it to where it got to,
-- but no later than its own start less reconcileOverlap: a job's
-- finalized_at is its dispatcher's clock when it ended, committed a moment
-- later, so the latest jobs may not all be visible yet.
CREATE TABLE herald.reconciler (
    singleton      boolean PRIMARY KEY DEFAULT true CONSTRAINT reconciler_one_row CHECK (singleton),
    examined_until timestamptz NOT NULL DEFAULT 'epoch'
);
INSERT INTO herald.reconciler DEFAULT VALUES;

-- Whether a delivery still has a live job (one River will run: available,
-- pending, retryable, running or scheduled, which are exactly the states
-- without finalized_at): the delivery jobs (kind herald.delivery, the
-- delivery.Kind constant) by the delivery_id in their args. River's GIN index
-- on args answers the same question, but every search scans GIN's pending
-- list of recent inserts, up to 4 MB on a busy queue: 14 ms a lookup measured
-- on a filled database, against 0.02 ms here. Only live versions of the rows
-- are indexed (a completed job leaves the index); batch jobs are not, since
-- the reconciler hands a delivery over from its batch job the way a batch job
-- does (next_attempt_at set with the new job).
--
-- Built without CONCURRENTLY, as migrations run in one transaction: inserting
-- jobs waits for the build, which scans river_job once.
CREATE INDEX river_job_live_delivery ON herald.river_job ((args->>'delivery_id'))
    WHERE kind = 'herald.delivery' AND finalized_at IS NULL;
