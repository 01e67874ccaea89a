-- Publishing into the outbox from SQL. One implementation serves every
-- producer: Go's outbox.Publish calls herald.try_publish, producers in other
-- languages call herald.publish. Both run inside the producer's transaction.

-- herald.uuid_v7 returns a time-ordered UUID (RFC 9562 version 7) for the
-- given time: 48 bits of unix milliseconds, then 12 bits of the fraction of
-- the millisecond (so ids made by one session within a millisecond still
-- sort by time), then random bits from gen_random_uuid. Postgres 15 has no
-- uuidv7(); Go code uses uuid.NewV7 for its own ids, which sort the same way.
CREATE FUNCTION herald.uuid_v7(at timestamptz DEFAULT clock_timestamp())
RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_micros bigint := floor(extract(epoch FROM at) * 1000000)::bigint;
    v_sub    integer := ((v_micros % 1000) * 4096 / 1000)::integer;
    v_bytes  bytea := uuid_send(gen_random_uuid());
BEGIN
    v_bytes := overlay(v_bytes PLACING substring(int8send(v_micros / 1000) FROM 3 FOR 6) FROM 1 FOR 6);
    -- Version 7 in the high nibble of byte 6; gen_random_uuid already set
    -- the RFC variant bits in byte 8.
    v_bytes := set_byte(v_bytes, 6, x'70'::integer | (v_sub >> 8));
    v_bytes := set_byte(v_bytes, 7, v_sub & 255);
    RETURN encode(v_bytes, 'hex')::uuid;
END
$$;

-- herald.try_publish is the whole publish operation. It never raises for bad
-- input: it returns problem_field and problem instead, having changed
-- nothing, so the caller's transaction stays usable without a savepoint
-- (a savepoint per publish would cost a subtransaction each, and producers
-- that publish hundreds of events in one transaction would overflow
-- Postgres's subtransaction cache).
--
-- data arrives as text and is parsed here, inside an exception block that
-- writes nothing, so invalid JSON (including \u0000 escapes and numbers
-- jsonb cannot hold) is reported as a problem too.
--
-- The serialized data may be at most herald.max_payload_bytes bytes
-- (default 262144, 256 KiB; the envelope adds at most about 500 bytes).
-- Operators change it with, for example:
--   ALTER DATABASE herald SET herald.max_payload_bytes = '1048576';
--
-- On success the object's version is bumped under its row lock (so version
-- order is commit order), the message row holds the exact wire body, and
-- pg_notify wakes the dispatcher when the transaction commits. A repeated
-- idempotency key returns the first message with duplicate = true and bumps
-- nothing.
CREATE FUNCTION herald.try_publish(
    p_tenant          text,
    p_type            text,
    p_object_id       text,
    p_data            text,
    p_idempotency_key text,
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

    INSERT INTO herald.messages AS m (id, tenant_id, event_type, object_id, object_version, body, idempotency_key, created_at)
    VALUES (herald.uuid_v7(v_now), p_tenant, p_type, p_object_id, version, v_body, p_idempotency_key, v_now)
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

    PERFORM pg_notify('herald_outbox', '');
END
$$;

-- herald.publish is the operation for producers that are not written in Go:
--
--   BEGIN;
--   UPDATE invoices SET paid = true WHERE id = 'inv_123';
--   SELECT * FROM herald.publish('acme', 'invoice.paid', 'inv_123',
--                                '{"amount": 4200}', idempotency_key => 'pay_9');
--   COMMIT;
--
-- It returns the message's id and the object's new version (the first
-- message's, for a repeated idempotency key) and raises
-- invalid_parameter_value (SQLSTATE 22023) naming the problem for bad input.
CREATE FUNCTION herald.publish(
    tenant          text,
    type            text,
    object_id       text,
    data            jsonb,
    idempotency_key text DEFAULT NULL,
    OUT message_id  uuid,
    OUT version     bigint
)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM herald.try_publish(tenant, type, object_id, data::text, idempotency_key);
    IF r.problem IS NOT NULL THEN
        RAISE EXCEPTION 'herald.publish: % %', r.problem_field, r.problem
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    message_id := r.message_id;
    version := r.version;
END
$$;
