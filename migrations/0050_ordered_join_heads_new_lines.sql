-- A delivery that starts its line becomes the line's head as the line is
-- made, without passing through ordered_waiting.
--
-- Profiled on the ordered-steady bench scenario (docs/benchmarks.md):
-- with 1,000 events a second over 1,000 objects, a line lives from one
-- version's fan-out to its settle, about 50 ms of every second, so nearly
-- every delivery found no line. ordered_join still made the line headless,
-- queued every delivery in ordered_waiting and let ordered_advance_lines
-- pick each line's lowest version, delete it from ordered_waiting and set
-- it as the head: three more row writes per delivery (12 rows written per
-- delivery against steady's 8) and two more statements per fan-out.
--
-- Now the line, when this statement inserts it, gets its lowest joining
-- version as its head, which is what ordered_next would have chosen: a
-- new line has no head and no waiting version, and every joining delivery
-- is pending. A line that exists (a conflict) is only locked, as before;
-- its head and its parked state are the business of the statements that
-- follow, unchanged. The new head is returned with the other heads (the
-- RETURN QUERY on heads), and is not queued in ordered_waiting (its NOT
-- EXISTS on heads).
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

    WITH firsts AS (
        SELECT DISTINCT ON (u.endpoint_id, u.object_id) u.endpoint_id, u.object_id, u.id, u.version
        FROM unnest(ids, endpoints, objects, versions) AS u (id, endpoint_id, object_id, version)
        ORDER BY u.endpoint_id, u.object_id, u.version
    ), locked AS (
        INSERT INTO herald.ordered_lines AS l (endpoint_id, object_id, head_delivery_id, head_version, head_since)
        SELECT f.endpoint_id, f.object_id, f.id, f.version, now()
        FROM firsts f
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
