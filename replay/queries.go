package replay

// The SQL of resend and replay.
const (
	// selectResendTarget holds the message (FOR KEY SHARE) until the
	// resend commits: the purge of a tenant's history past its own
	// retention (package retention) locks the messages it deletes FOR
	// UPDATE, so the resend either waits and finds the message gone, or
	// keeps it from being purged with the delivery it makes pending.
	selectResendTarget = `
SELECT e.tenant_id, e.enabled, e.ordering = 'object'
FROM herald.messages m JOIN herald.endpoints e ON e.tenant_id = m.tenant_id
WHERE m.id = $1 AND e.id = $2
FOR KEY SHARE OF m`

	// lockDelivery and requeueDelivery find the (message, endpoint)
	// delivery in the message's partition (herald.history_lower, migration
	// 0046) rather than in every partition's index.
	lockDelivery = `
SELECT status FROM herald.deliveries
WHERE message_id = $1 AND endpoint_id = $2 AND id >= herald.history_lower($1) AND id < herald.history_upper($1)
FOR UPDATE`

	// requeueDelivery creates the (message, endpoint) delivery, or requeues
	// the existing one, pending or not: sets it pending and due now, with a
	// fresh retry window and schedule (its attempts so far no longer count
	// towards either), in its next generation, which fences out its earlier
	// jobs (see delivery.Args.Generation). It returns the delivery and its
	// generation. The pair is unique in each partition of deliveries rather
	// than in the table (migrations/0024_history_partitions.sql), so this is
	// an update, else an insert that does nothing on a conflict: when a
	// concurrent transaction inserted the pair first, it returns no row once
	// that one committed, and running it again updates that delivery.
	requeueDelivery = `
WITH requeued AS (
  UPDATE herald.deliveries
  SET status = 'pending', generation = generation + 1,
      attempts_before_requeue = attempt_count,
      first_attempt_at = NULL, next_attempt_at = now(), completed_at = NULL, updated_at = now()
  WHERE message_id = $2 AND endpoint_id = $3 AND id >= herald.history_lower($2) AND id < herald.history_upper($2)
  RETURNING id, generation
), created AS (
  INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status)
  SELECT $1, $2, $3, $4, 'pending' WHERE NOT EXISTS (SELECT FROM requeued)
  ON CONFLICT DO NOTHING
  RETURNING id, generation
)
SELECT id, generation FROM requeued UNION ALL SELECT id, generation FROM created`

	markDispatched = `UPDATE herald.messages SET dispatched_at = $2 WHERE id = $1 AND dispatched_at IS NULL`

	selectEndpoint = `SELECT tenant_id, enabled FROM herald.endpoints WHERE id = $1`

	// insertReplay counts the replay's selection, the endpoint's
	// deliveries created in [$4, $5) (all, or $6 only those that failed,
	// were cancelled or skipped), through deliveries_endpoint_created.
	insertReplay = `
INSERT INTO herald.replays (id, tenant_id, endpoint_id, since_at, until_at, only_failed, total)
VALUES ($1, $2, $3, $4, $5, $6, (
  SELECT count(*) FROM herald.deliveries d
  WHERE d.endpoint_id = $3 AND d.created_at >= $4 AND d.created_at < $5
    AND (NOT $6 OR d.status IN ('failed', 'cancelled', 'skipped'))))
RETURNING ` + replayColumns

	// replayColumns reads a replay with its progress. Done is what it
	// has enqueued less those of them still pending, and those are found
	// among the endpoint's pending deliveries (deliveries_pending), each
	// checked against the replay's rows by primary key in a scalar
	// subquery (which the planner runs per row rather than hashing all
	// the replay's rows): reading a replay's progress costs the
	// endpoint's backlog, next to nothing once it has drained, whatever
	// the replay's size. Counting the replay's deliveries that were no
	// longer pending hash-joined them with every tenant's deliveries: the
	// portal's endpoint page, which lists the latest replays, took 7.9 s
	// after a replay of 100,000 on a database with 5,000,000 deliveries;
	// on 2,100,000 that count took 3.8 s and this one 12 ms (25 ms with
	// 5,000 of the replay pending).
	// enqueued counts the rows a batch adds to replay_deliveries, in the
	// same transaction, so the two agree; a replayed delivery erased or
	// dropped by retention since counts as done.
	// Once the replay's job has seen none of them pending (drained_at,
	// migration 0052), done is enqueued, without the count.
	replayColumns = `id, tenant_id, endpoint_id, since_at, until_at, only_failed, status, total, enqueued,
  CASE WHEN drained_at IS NOT NULL THEN enqueued ELSE enqueued - ` + pendingOfReplay + ` END,
  created_at, completed_at`

	// pendingOfReplay counts the deliveries of the replay in
	// herald.replays' row that are pending (see replayColumns).
	pendingOfReplay = `(SELECT count(*) ` + replayPending + `)::int`

	// replayPending are the pending deliveries of the replay in
	// herald.replays' row, found among its endpoint's.
	replayPending = `FROM herald.deliveries d
              WHERE d.endpoint_id = herald.replays.endpoint_id AND d.status = 'pending'
                AND (SELECT true FROM herald.replay_deliveries rd
                     WHERE rd.replay_id = herald.replays.id AND rd.delivery_id = d.id)`

	// selectDrain looks for a pending delivery of the replay $1 when it
	// is completed and not seen drained, marks it drained when there is
	// none, and returns when its walk completed and 1 or 0; no row when
	// there is nothing to watch (the replay is gone, running, cancelled or
	// drained). It stops at the first pending delivery it finds: counting
	// them all, once a second while a replay of 100,000 drained on the
	// aged bench, took up to 3.5 s a look.
	selectDrain = `
WITH watched AS (
    SELECT id, completed_at, (SELECT count(*) FROM (SELECT ` + replayPending + ` LIMIT 1) p)::int AS pending
    FROM herald.replays WHERE id = $1 AND status = 'completed' AND drained_at IS NULL
), marked AS (
    UPDATE herald.replays r SET drained_at = now(), updated_at = now()
    FROM watched w WHERE r.id = w.id AND w.pending = 0
)
SELECT completed_at, pending FROM watched`

	selectReplay = `
SELECT ` + replayColumns + ` FROM herald.replays
WHERE tenant_id = $1 AND endpoint_id = $2 AND id = $3`

	listReplays = `
SELECT ` + replayColumns + ` FROM herald.replays
WHERE tenant_id = $1 AND endpoint_id = $2
  AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $5`

	lockReplay = `
SELECT r.endpoint_id, r.since_at, r.until_at, r.only_failed, r.status, r.cursor_created_at, r.cursor_id,
  coalesce((SELECT e.ordering = 'object' FROM herald.endpoints e WHERE e.id = r.endpoint_id), false)
FROM herald.replays r WHERE r.id = $1 FOR UPDATE OF r`

	// nextBatch walks the next $5 of the endpoint's deliveries ($1) after
	// the cursor ($2, $3) in (created_at, id) order, up to $4, along
	// deliveries_endpoint_created: each batch reads its own rows of the
	// index and no others, so every batch costs the same however far the
	// walk has gone. With $6 it selects only those that failed, were
	// cancelled or skipped; the others are walked past, and the cursor
	// moves past them too. Last comes whether the delivery has been left
	// alone (not updated, nor completed) for the last $7 seconds: see
	// Worker's quietAfter.
	nextBatch = `
SELECT d.id, d.message_id, d.created_at, (NOT $6 OR d.status IN ('failed', 'cancelled', 'skipped')),
  greatest(d.updated_at, d.completed_at) < now() - make_interval(secs => $7)
FROM herald.deliveries d
WHERE d.endpoint_id = $1 AND (d.created_at, d.id) > ($2, $3) AND d.created_at < $4
ORDER BY d.created_at, d.id
LIMIT $5`

	recordReplayDeliveries = `
INSERT INTO herald.replay_deliveries (replay_id, delivery_id)
SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING`

	// requeueBatch requeues, as requeueDelivery does, the deliveries $1 of
	// a replay batch that are not pending, but leaves next_attempt_at
	// empty: they go to batch jobs (delivery.BatchArgs), which own a
	// delivery only while nothing has set it. The batch's span of ids
	// prunes the partitions it is not in (herald.least_id).
	requeueBatch = `
UPDATE herald.deliveries
SET status = 'pending', generation = generation + 1, attempts_before_requeue = attempt_count,
    first_attempt_at = NULL, next_attempt_at = NULL, completed_at = NULL, updated_at = now()
WHERE id = ANY($1) AND id BETWEEN herald.least_id($1) AND herald.greatest_id($1) AND status <> 'pending'
RETURNING id, generation`

	advanceReplay = `
UPDATE herald.replays
SET enqueued = enqueued + $2, cursor_created_at = $3, cursor_id = $4, updated_at = now()
WHERE id = $1`

	completeReplay = `
UPDATE herald.replays
SET status = 'completed', total = enqueued, completed_at = now(), updated_at = now()
WHERE id = $1`
)
