-- The producer's trace context, carried through the outbox.
--
-- A message keeps the W3C traceparent of the span that published it
-- (outbox.Publish takes it from its context; the HTTP API from the
-- request's traceparent header), so the spans of its fan-out and of every
-- attempt to deliver it join the producer's trace. NULL when the producer
-- was not tracing. Only the traceparent is kept: tracestate is vendor data
-- that Herald's spans do not need to continue the trace.
--
-- Postgres adds a nullable column without rewriting the table. Whoever
-- rebuilds herald.messages (partitioning it) carries the column over.

ALTER TABLE herald.messages ADD COLUMN traceparent text;

-- herald.try_publish as in 0009_outbox_wakeups.sql, with p_traceparent,
-- which must be NULL or a well-formed traceparent (version, trace id,
-- parent id and flags in lower-case hex). The five-argument function is
-- dropped first: with p_traceparent defaulted, a call with five arguments
-- would otherwise match both.
DROP FUNCTION herald.try_publish(text, text, text, text, text);
CREATE FUNCTION herald.try_publish(
    p_tenant          text,
    p_type            text,
    p_object_id       text,
    p_data            text,
    p_idempotency_key text,
    p_traceparent     text DEFAULT NULL,
    OUT message_id    uuid,
    OUT version       bigint,
    OUT duplicate     boolean,
    OUT problem_field text,
    OUT problem       text
)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_limit integer := coalesce(nullif(current_setting('herald.max_payload_bytes', true), '')::integer, 262144);
    v_now   timestamptz := clock_timestamp();
    v_data  jsonb;
    v_size  integer;
    v_body  text;
BEGIN
    duplicate := false;

    IF p_tenant IS NULL OR p_tenant = '' THEN
        problem_field := 'tenant';
        problem := 'is empty; name the tenant the event belongs to';
        RETURN;
    END IF;
    IF p_type IS NULL OR p_type = '' THEN
        problem_field := 'type';
        problem := 'is empty; name the event, for example invoice.paid';
        RETURN;
    END IF;
    IF length(p_type) > 128 THEN
        problem_field := 'type';
        problem := format('is %s characters long; at most 128 are allowed', length(p_type));
        RETURN;
    END IF;
    IF p_type !~ '^[a-z0-9][a-z0-9_.-]*$' THEN
        problem_field := 'type';
        problem := format('%s is malformed; use lower-case letters, digits, ".", "_" and "-", starting with a letter or digit, for example invoice.paid', to_json(p_type));
        RETURN;
    END IF;
    IF p_object_id IS NULL OR p_object_id = '' THEN
        problem_field := 'object_id';
        problem := 'is empty; name the object the event is about, for example inv_123';
        RETURN;
    END IF;
    IF length(p_object_id) > 256 THEN
        problem_field := 'object_id';
        problem := format('is %s characters long; at most 256 are allowed', length(p_object_id));
        RETURN;
    END IF;
    IF p_idempotency_key = '' THEN
        problem_field := 'idempotency_key';
        problem := 'is empty; pass NULL for no key';
        RETURN;
    END IF;
    IF length(p_idempotency_key) > 256 THEN
        problem_field := 'idempotency_key';
        problem := format('is %s characters long; at most 256 are allowed', length(p_idempotency_key));
        RETURN;
    END IF;
    IF p_data IS NULL THEN
        problem_field := 'data';
        problem := 'is missing; pass a JSON object, for example {}';
        RETURN;
    END IF;
    BEGIN
        v_data := p_data::jsonb;
    EXCEPTION WHEN OTHERS THEN
        problem_field := 'data';
        problem := format('is not valid JSON: %s', SQLERRM);
        RETURN;
    END;
    IF jsonb_typeof(v_data) <> 'object' THEN
        problem_field := 'data';
        problem := format('is a JSON %s; it must be a JSON object, for example {"id": "inv_123"}', jsonb_typeof(v_data));
        RETURN;
    END IF;
    v_size := octet_length(v_data::text);
    IF v_size > v_limit THEN
        problem_field := 'data';
        problem := format('is %s bytes; the limit is %s bytes (herald.max_payload_bytes)', v_size, v_limit);
        RETURN;
    END IF;
    IF p_traceparent IS NOT NULL AND p_traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN
        problem_field := 'traceparent';
        problem := format('%s is not a W3C traceparent; pass one like 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, or NULL', to_json(p_traceparent));
        RETURN;
    END IF;
    PERFORM FROM herald.tenants t WHERE t.id = p_tenant;
    IF NOT FOUND THEN
        problem_field := 'tenant';
        problem := format('%s does not exist; create the tenant before publishing to it', to_json(p_tenant));
        RETURN;
    END IF;

    IF p_idempotency_key IS NOT NULL THEN
        SELECT m.id, m.object_version INTO message_id, version
        FROM herald.messages m
        WHERE m.tenant_id = p_tenant AND m.idempotency_key = p_idempotency_key;
        IF FOUND THEN
            duplicate := true;
            RETURN;
        END IF;
    END IF;

    INSERT INTO herald.object_versions AS ov (tenant_id, object_id, version)
    VALUES (p_tenant, p_object_id, 1)
    ON CONFLICT (tenant_id, object_id) DO UPDATE SET version = ov.version + 1
    RETURNING ov.version INTO version;

    v_body := '{"type":' || to_json(p_type)::text
        || ',"timestamp":' || to_json(to_char(v_now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))::text
        || ',"object":{"id":' || to_json(p_object_id)::text || ',"version":' || version::text || '}'
        || ',"data":' || v_data::text || '}';

    INSERT INTO herald.messages AS m (id, tenant_id, event_type, object_id, object_version, body, idempotency_key, created_at, traceparent)
    VALUES (herald.uuid_v7(v_now), p_tenant, p_type, p_object_id, version, v_body, p_idempotency_key, v_now, p_traceparent)
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING m.id INTO message_id;

    IF message_id IS NULL THEN
        -- A concurrent transaction committed the same idempotency key after
        -- the check above. Take the bump back (this transaction still holds
        -- the object's row lock, so nobody bumped in between) and return the
        -- first message.
        IF version = 1 THEN
            DELETE FROM herald.object_versions ov
            WHERE ov.tenant_id = p_tenant AND ov.object_id = p_object_id;
        ELSE
            UPDATE herald.object_versions ov SET version = ov.version - 1
            WHERE ov.tenant_id = p_tenant AND ov.object_id = p_object_id;
        END IF;
        SELECT m.id, m.object_version INTO message_id, version
        FROM herald.messages m
        WHERE m.tenant_id = p_tenant AND m.idempotency_key = p_idempotency_key;
        duplicate := true;
        RETURN;
    END IF;

    PERFORM herald.wake_dispatcher(v_now);
END
$$;

-- herald.publish as in 0003_outbox.sql, with an optional traceparent for
-- producers in other languages that trace:
--   SELECT * FROM herald.publish('acme', 'invoice.paid', 'inv_123', '{"amount": 4200}',
--                                traceparent => '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
DROP FUNCTION herald.publish(text, text, text, jsonb, text);
CREATE FUNCTION herald.publish(
    tenant          text,
    type            text,
    object_id       text,
    data            jsonb,
    idempotency_key text DEFAULT NULL,
    traceparent     text DEFAULT NULL,
    OUT message_id  uuid,
    OUT version     bigint
)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM herald.try_publish(tenant, type, object_id, data::text, idempotency_key, traceparent);
    IF r.problem IS NOT NULL THEN
        RAISE EXCEPTION 'herald.publish: % %', r.problem_field, r.problem
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    message_id := r.message_id;
    version := r.version;
END
$$;
