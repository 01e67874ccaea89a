-- Settling an ordered delivery finds its line by the line's key, which the
-- recording worker already holds, instead of through the delivery and its
-- message.
--
-- Profiled on the ordered-steady bench scenario (docs/benchmarks.md,
-- "Ordered delivery") with pg_stat_statements and auto_explain:
-- ordered_settle was the largest statement of the run, 24 s per 60,000
-- deliveries, and its lookup of each settled delivery's message took
-- 50 µs a row against 3 µs on a quiet table: the newest messages' pages are
-- those the producers are inserting into. The worker has each delivery's
-- endpoint and object (it locked the lines by them, lockSettlingLines), so
-- it passes them, and the settle reads each line by primary key, its head
-- checked against the delivery.
--
-- The one-argument ordered_settle of 0048 stays for dispatchers still
-- running the previous release during a rolling upgrade.
CREATE FUNCTION herald.ordered_settle(p_deliveries uuid[], p_endpoints uuid[], p_objects text[])
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
        FROM unnest(p_deliveries, p_endpoints, p_objects) AS u (id, endpoint_id, object_id)
        JOIN herald.ordered_lines l ON l.endpoint_id = u.endpoint_id AND l.object_id = u.object_id
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
