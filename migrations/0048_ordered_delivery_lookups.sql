-- Ordered delivery's lookups by index, and one update of a line per settle.
--
-- Profiled on the ordered bench scenario (docs/benchmarks.md, "Ordered
-- delivery"), with pg_stat_statements and auto_explain, 0037's functions
-- spent their time in three places:
--
-- * ordered_join read its deliveries by id = ANY(p_deliveries). Postgres
--   prunes no partition by an array parameter, and with no statistics on
--   the fresh tables it drove the read from the ordered endpoints through
--   deliveries' endpoint index, testing every pending delivery of each
--   endpoint against the 5,000 ids: 1.5 s a call, 14 s per 100,000
--   deliveries. It now looks each id up in the primary key of the one
--   partition that can hold it (herald.history_lower and history_upper,
--   migration 0046), and each delivery's message likewise.
-- * ordered_settle cleared the settled heads (one update of each line) and
--   ordered_advance_lines then found those lines again, through the
--   partial index of parked lines (the endpoint's headless lines, scanned
--   and filtered by object), and set their next heads (a second update).
--   Every update of a line changes head_delivery_id, which is indexed, so
--   each is a new row version in every index of the table (see below for
--   that index). ordered_settle now sets each settled line's next head, or
--   deletes the line, through ordered_next: one update per settle.
-- * The waiting rows a line's new head passes were deleted by a condition
--   on the version the index could not use (object_version <= v OR v IS
--   NULL), so every advance read the line's whole backlog: for a line of
--   100 versions, about 5,000 rows read to settle them. The bound is now a
--   column of the index's condition.
--
-- ordered_lines_parked (a line's endpoint, for lines with no head) goes:
-- it served ordered_resume, an operator's enabling of an endpoint, which
-- now reads the endpoint's lines along the primary key; its only other use
-- was the planner's wrong choice above.
--
-- The functions that take arrays are planned once per session
-- (plan_cache_mode = force_generic_plan): a custom plan for 5,000 ids cost
-- 110 ms of planning, and the generic plan, which assumes a few ids, looks
-- each up by index, the right plan at every size.
--
-- The rules and the lock order (lines in (endpoint_id, object_id) order,
-- then deliveries) are unchanged.

DROP INDEX herald.ordered_lines_parked;

-- A line's head changes at every settle. While head_delivery_id was
-- indexed (ordered_lines_head), each change was a new version of the row in
-- every index of the table; with autovacuum slow or off, the primary key of
-- a line of 100 versions held 100 entries, which every lookup of the line
-- read. Unindexed, the change is a heap-only update that the row's page
-- prunes, given room on the page. Lines are now found by their primary
-- key: the recording knows the endpoint and object of what it settles, and
-- ordered_settle finds them through the deliveries and their messages.
DROP INDEX herald.ordered_lines_head;
ALTER TABLE herald.ordered_lines SET (fillfactor = 50);

-- ordered_next gives each line (p_endpoints[i], p_objects[i]), locked by
-- the caller, its next head, whatever its head was: the lowest waiting
-- version whose delivery is still pending. The waiting rows it passes
-- (their delivery settled or gone) and the new head's own are deleted, and
-- so is a line left with no pending version. It returns the new heads, for
-- the caller to give jobs. Each line is read along the primary key of
-- ordered_waiting up to its first pending version, and each delivery in the
-- one partition that can hold it.
CREATE FUNCTION herald.ordered_next(p_endpoints uuid[], p_objects text[])
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    endpoints uuid[];
    objects text[];
    versions bigint[];
    deliveries uuid[];
    generations integer[];
    batchables boolean[];
    triggers text[];
BEGIN
    SELECT array_agg(u.endpoint_id), array_agg(u.object_id), array_agg(n.object_version), array_agg(n.delivery_id),
        array_agg(n.generation), array_agg(n.batchable), array_agg(n.trigger)
    INTO endpoints, objects, versions, deliveries, generations, batchables, triggers
    FROM unnest(p_endpoints, p_objects) AS u (endpoint_id, object_id)
    LEFT JOIN LATERAL (
        SELECT w.object_version, w.delivery_id, w.trigger, d.generation,
            d.next_attempt_at IS NULL AND d.attempt_count = d.attempts_before_requeue AS batchable
        FROM herald.ordered_waiting w
        JOIN herald.deliveries d ON d.id = w.delivery_id
            AND d.id >= herald.history_lower(w.delivery_id) AND d.id < herald.history_upper(w.delivery_id)
            AND d.status = 'pending'
        WHERE w.endpoint_id = u.endpoint_id AND w.object_id = u.object_id
        ORDER BY w.object_version
        LIMIT 1
    ) n ON true;
    IF endpoints IS NULL THEN
        RETURN;
    END IF;

    DELETE FROM herald.ordered_waiting w
    USING unnest(endpoints, objects, versions) AS n (endpoint_id, object_id, object_version)
    WHERE w.endpoint_id = n.endpoint_id AND w.object_id = n.object_id
      AND w.object_version <= coalesce(n.object_version, 9223372036854775807);
    DELETE FROM herald.ordered_lines l
    USING unnest(endpoints, objects, deliveries) AS n (endpoint_id, object_id, delivery_id)
    WHERE n.delivery_id IS NULL AND l.endpoint_id = n.endpoint_id AND l.object_id = n.object_id;
    UPDATE herald.ordered_lines l
    SET head_delivery_id = n.delivery_id, head_version = n.object_version, head_since = now()
    FROM unnest(endpoints, objects, versions, deliveries) AS n (endpoint_id, object_id, object_version, delivery_id)
    WHERE n.delivery_id IS NOT NULL AND l.endpoint_id = n.endpoint_id AND l.object_id = n.object_id;

    RETURN QUERY
        SELECT n.delivery_id, n.endpoint_id, n.generation, n.batchable, n.trigger
        FROM unnest(deliveries, endpoints, generations, batchables, triggers) AS n (delivery_id, endpoint_id, generation, batchable, trigger)
        WHERE n.delivery_id IS NOT NULL;
END
$$;

-- ordered_advance_lines: as in 0037, the lines among (p_endpoints[i],
-- p_objects[i]) that have no head get their next, through ordered_next.
CREATE OR REPLACE FUNCTION herald.ordered_advance_lines(p_endpoints uuid[], p_objects text[])
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    endpoints uuid[];
    objects text[];
BEGIN
    SELECT array_agg(l.endpoint_id ORDER BY l.endpoint_id, l.object_id), array_agg(l.object_id ORDER BY l.endpoint_id, l.object_id)
    INTO endpoints, objects
    FROM (SELECT DISTINCT u.endpoint_id, u.object_id FROM unnest(p_endpoints, p_objects) AS u (endpoint_id, object_id)) u
    JOIN herald.ordered_lines l ON l.endpoint_id = u.endpoint_id AND l.object_id = u.object_id
    WHERE l.head_delivery_id IS NULL;
    IF endpoints IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM herald.ordered_next(endpoints, objects);
END
$$;

-- ordered_join: as in 0037, its deliveries (and their messages) read by
-- primary key in the partition of each.
CREATE OR REPLACE FUNCTION herald.ordered_join(p_deliveries uuid[], p_trigger text, p_preempt boolean)
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    ids uuid[];
    endpoints uuid[];
    objects text[];
    versions bigint[];
    line_endpoints uuid[];
    line_objects text[];
BEGIN
    SELECT array_agg(d.id ORDER BY d.endpoint_id, m.object_id, m.object_version),
           array_agg(d.endpoint_id ORDER BY d.endpoint_id, m.object_id, m.object_version),
           array_agg(m.object_id ORDER BY d.endpoint_id, m.object_id, m.object_version),
           array_agg(m.object_version ORDER BY d.endpoint_id, m.object_id, m.object_version)
    INTO ids, endpoints, objects, versions
    FROM unnest(p_deliveries) AS u (id)
    JOIN herald.deliveries d ON d.id = u.id
        AND d.id >= herald.history_lower(u.id) AND d.id < herald.history_upper(u.id)
    JOIN herald.messages m ON m.id = d.message_id
        AND m.id >= herald.history_lower(d.message_id) AND m.id < herald.history_upper(d.message_id)
    JOIN herald.endpoints e ON e.id = d.endpoint_id AND e.ordering = 'object'
    WHERE d.status = 'pending';
    IF ids IS NULL THEN
        RETURN;
    END IF;

    WITH locked AS (
        INSERT INTO herald.ordered_lines AS l (endpoint_id, object_id)
        SELECT DISTINCT u.endpoint_id, u.object_id
        FROM unnest(endpoints, objects) AS u (endpoint_id, object_id)
        ORDER BY 1, 2
        ON CONFLICT (endpoint_id, object_id) DO UPDATE SET head_since = l.head_since
        RETURNING l.endpoint_id, l.object_id
    )
    SELECT array_agg(endpoint_id), array_agg(object_id) INTO line_endpoints, line_objects FROM locked;

    IF p_preempt THEN
        WITH joining AS (
            SELECT u.endpoint_id, u.object_id, min(u.version) AS version
            FROM unnest(ids, endpoints, objects, versions) AS u (id, endpoint_id, object_id, version)
            GROUP BY u.endpoint_id, u.object_id
        ), preempted AS (
            SELECT l.endpoint_id, l.object_id, l.head_delivery_id, l.head_version
            FROM herald.ordered_lines l
            JOIN joining j ON j.endpoint_id = l.endpoint_id AND j.object_id = l.object_id
            WHERE l.head_delivery_id IS NOT NULL AND l.head_version > j.version
        ), fenced AS (
            UPDATE herald.deliveries d SET generation = d.generation + 1, updated_at = now()
            FROM preempted p
            WHERE d.id = p.head_delivery_id
              AND d.id >= herald.history_lower(p.head_delivery_id) AND d.id < herald.history_upper(p.head_delivery_id)
              AND d.status = 'pending'
        ), waiting AS (
            INSERT INTO herald.ordered_waiting (endpoint_id, object_id, object_version, delivery_id, trigger)
            SELECT p.endpoint_id, p.object_id, p.head_version, p.head_delivery_id, 'scheduled'
            FROM preempted p
            ON CONFLICT DO NOTHING
        )
        UPDATE herald.ordered_lines l SET head_delivery_id = NULL, head_version = NULL, head_since = NULL
        FROM preempted p
        WHERE l.endpoint_id = p.endpoint_id AND l.object_id = p.object_id;
    END IF;

    RETURN QUERY
        SELECT d.id, d.endpoint_id, d.generation,
            d.next_attempt_at IS NULL AND d.attempt_count = d.attempts_before_requeue, p_trigger
        FROM unnest(ids, endpoints, objects) AS u (id, endpoint_id, object_id)
        JOIN herald.ordered_lines l ON l.endpoint_id = u.endpoint_id AND l.object_id = u.object_id
            AND l.head_delivery_id = u.id
        JOIN herald.deliveries d ON d.id = u.id
            AND d.id >= herald.history_lower(u.id) AND d.id < herald.history_upper(u.id);

    INSERT INTO herald.ordered_waiting (endpoint_id, object_id, object_version, delivery_id, trigger)
    SELECT u.endpoint_id, u.object_id, u.version, u.id, p_trigger
    FROM unnest(ids, endpoints, objects, versions) AS u (id, endpoint_id, object_id, version)
    WHERE NOT EXISTS (
        SELECT FROM herald.ordered_lines l
        WHERE l.endpoint_id = u.endpoint_id AND l.object_id = u.object_id AND l.head_delivery_id = u.id)
    ORDER BY u.endpoint_id, u.object_id, u.version
    ON CONFLICT (delivery_id) DO UPDATE SET trigger = excluded.trigger;

    RETURN QUERY SELECT * FROM herald.ordered_advance_lines(line_endpoints, line_objects);
END
$$;

-- ordered_settle: as in 0037, but each settled head's line goes straight
-- to its next head (ordered_next), without first being cleared, and the
-- lines are found by primary key, through their heads' deliveries and
-- messages.
CREATE OR REPLACE FUNCTION herald.ordered_settle(p_deliveries uuid[])
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    line_endpoints uuid[];
    line_objects text[];
BEGIN
    DELETE FROM herald.ordered_waiting ow WHERE ow.delivery_id = ANY (p_deliveries);
    WITH settled AS (
        SELECT l.endpoint_id, l.object_id
        FROM unnest(p_deliveries) AS u (id)
        JOIN herald.deliveries d ON d.id = u.id
            AND d.id >= herald.history_lower(u.id) AND d.id < herald.history_upper(u.id)
        JOIN herald.messages m ON m.id = d.message_id
            AND m.id >= herald.history_lower(d.message_id) AND m.id < herald.history_upper(d.message_id)
        JOIN herald.ordered_lines l ON l.endpoint_id = d.endpoint_id AND l.object_id = m.object_id
            AND l.head_delivery_id = u.id
        ORDER BY l.endpoint_id, l.object_id
        FOR UPDATE OF l
    )
    SELECT array_agg(endpoint_id), array_agg(object_id) INTO line_endpoints, line_objects FROM settled;
    IF line_endpoints IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM herald.ordered_next(line_endpoints, line_objects);
END
$$;
