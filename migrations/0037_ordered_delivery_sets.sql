-- Ordered delivery's joins and settles as set operations.
--
-- 0030's ordered_join and ordered_settle walked their deliveries one at a
-- time in PL/pgSQL, five to eight statements each. The fan-out joins a whole
-- transaction's ordered deliveries in one call and the recording of a batch
-- settles up to a hundred heads in one call, so under load one call ran for
-- seconds while it held the lines it had locked: the fan-out fell thousands
-- of messages behind and the drain rate of an ordered backlog fell to a
-- fifth of burst's (docs/benchmarks.md, "Ordered delivery"). These bodies do
-- the same work in a fixed number of statements, whatever the number of
-- deliveries; the rules and the lock order (lines in (endpoint_id,
-- object_id) order, then deliveries) are unchanged.

-- ordered_advance_lines gives each line of (p_endpoints[i], p_objects[i])
-- that has no head (locked by the caller) its next head: the lowest waiting
-- version whose delivery is still pending. The waiting rows it passes (their
-- delivery settled or gone) and the new head's own are deleted, and so is a
-- line left with neither head nor waiting version. It returns the new heads,
-- for the caller to give jobs. Each line is read along the primary key of
-- ordered_waiting up to its first pending version, so a long line costs only
-- what it skips.
CREATE FUNCTION herald.ordered_advance_lines(p_endpoints uuid[], p_objects text[])
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE sql AS $$
    WITH headless AS (
        SELECT DISTINCT l.endpoint_id, l.object_id
        FROM unnest(p_endpoints, p_objects) AS u (endpoint_id, object_id)
        JOIN herald.ordered_lines l ON l.endpoint_id = u.endpoint_id AND l.object_id = u.object_id
        WHERE l.head_delivery_id IS NULL
    ), next AS (
        SELECT h.endpoint_id, h.object_id, n.object_version, n.delivery_id, n.trigger, n.generation, n.batchable
        FROM headless h
        LEFT JOIN LATERAL (
            SELECT w.object_version, w.delivery_id, w.trigger, d.generation,
                d.next_attempt_at IS NULL AND d.attempt_count = d.attempts_before_requeue AS batchable
            FROM herald.ordered_waiting w
            JOIN herald.deliveries d ON d.id = w.delivery_id AND d.status = 'pending'
            WHERE w.endpoint_id = h.endpoint_id AND w.object_id = h.object_id
            ORDER BY w.object_version
            LIMIT 1
        ) n ON true
    ), taken AS (
        DELETE FROM herald.ordered_waiting w
        USING next n
        WHERE w.endpoint_id = n.endpoint_id AND w.object_id = n.object_id
          AND (n.object_version IS NULL OR w.object_version <= n.object_version)
    ), emptied AS (
        DELETE FROM herald.ordered_lines l
        USING next n
        WHERE n.delivery_id IS NULL AND l.endpoint_id = n.endpoint_id AND l.object_id = n.object_id
    ), headed AS (
        UPDATE herald.ordered_lines l
        SET head_delivery_id = n.delivery_id, head_version = n.object_version, head_since = now()
        FROM next n
        WHERE n.delivery_id IS NOT NULL AND l.endpoint_id = n.endpoint_id AND l.object_id = n.object_id
    )
    SELECT n.delivery_id, n.endpoint_id, n.generation, n.batchable, n.trigger
    FROM next n
    WHERE n.delivery_id IS NOT NULL
$$;

-- ordered_join: as in 0030. The deliveries are read once, their lines
-- created or locked by one statement in (endpoint_id, object_id) order;
-- with p_preempt, a line whose head is above the lowest version joining it
-- sends its head back to waiting in a new generation; heads that are among
-- the deliveries (a resend of the head) are returned as they are; every
-- other delivery waits; then the lines left without a head advance.
CREATE OR REPLACE FUNCTION herald.ordered_join(p_deliveries uuid[], p_trigger text, p_preempt boolean)
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql AS $$
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
    FROM herald.deliveries d
    JOIN herald.messages m ON m.id = d.message_id
    JOIN herald.endpoints e ON e.id = d.endpoint_id AND e.ordering = 'object'
    WHERE d.id = ANY (p_deliveries) AND d.status = 'pending';
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
            WHERE d.id = p.head_delivery_id AND d.status = 'pending'
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
        FROM herald.ordered_lines l
        JOIN herald.deliveries d ON d.id = l.head_delivery_id
        WHERE l.head_delivery_id = ANY (ids);

    INSERT INTO herald.ordered_waiting (endpoint_id, object_id, object_version, delivery_id, trigger)
    SELECT u.endpoint_id, u.object_id, u.version, u.id, p_trigger
    FROM unnest(ids, endpoints, objects, versions) AS u (id, endpoint_id, object_id, version)
    WHERE NOT EXISTS (SELECT FROM herald.ordered_lines l WHERE l.head_delivery_id = u.id)
    ORDER BY u.endpoint_id, u.object_id, u.version
    ON CONFLICT (delivery_id) DO UPDATE SET trigger = excluded.trigger;

    RETURN QUERY SELECT * FROM herald.ordered_advance_lines(line_endpoints, line_objects);
END
$$;

-- ordered_settle: as in 0030, in three statements: the settled heads leave
-- their lines (locked by the caller first), the settled deliveries leave
-- the waiting rows, and the lines advance.
CREATE OR REPLACE FUNCTION herald.ordered_settle(p_deliveries uuid[])
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql AS $$
DECLARE
    line_endpoints uuid[];
    line_objects text[];
BEGIN
    WITH settled AS (
        SELECT l.endpoint_id, l.object_id
        FROM herald.ordered_lines l
        WHERE l.head_delivery_id = ANY (p_deliveries)
        ORDER BY l.endpoint_id, l.object_id
        FOR UPDATE
    ), cleared AS (
        UPDATE herald.ordered_lines l SET head_delivery_id = NULL, head_version = NULL, head_since = NULL
        FROM settled s
        WHERE l.endpoint_id = s.endpoint_id AND l.object_id = s.object_id
        RETURNING l.endpoint_id, l.object_id
    )
    SELECT array_agg(endpoint_id), array_agg(object_id) INTO line_endpoints, line_objects FROM cleared;
    DELETE FROM herald.ordered_waiting ow WHERE ow.delivery_id = ANY (p_deliveries);
    IF line_endpoints IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM herald.ordered_advance_lines(line_endpoints, line_objects);
END
$$;
