-- Waking the dispatcher without serialising every publisher.
--
-- A transaction that has called pg_notify takes, at commit, a lock that
-- Postgres holds cluster-wide until the commit is durable: committing
-- transactions that notify run one at a time, each waiting for its own WAL
-- flush. With a notification per publish, producers committed at most one
-- publish per flush (a few hundred per second here), and sampling
-- pg_stat_activity during the steady benchmark showed nearly every commit
-- waiting on that lock ("Lock: object").
--
-- A notification is only needed when the dispatcher may be asleep. After
-- one wakes it, the dispatcher stays awake, polling every few milliseconds,
-- until no message has arrived for half a second (see the dispatcher's
-- linger). So a publish notifies only when no publish of any session has
-- notified in the last 100 ms: herald.outbox_wakeups holds when the last
-- notification was taken, and the publisher that takes the next one locks
-- its row with SKIP LOCKED, so publishers never wait for each other here.
-- Under load that is ten notifying commits a second instead of one per
-- publish. If the notifying transaction rolls back, the dispatcher finds
-- the other publishes at its next poll (at most --poll-interval, 1 s).

CREATE TABLE herald.outbox_wakeups (
    singleton boolean PRIMARY KEY DEFAULT true CONSTRAINT outbox_wakeups_singleton CHECK (singleton),
    at        timestamptz NOT NULL
);
INSERT INTO herald.outbox_wakeups (at) VALUES ('-infinity');

-- herald.wake_dispatcher notifies herald_outbox (at commit) unless a
-- publish took a notification within the last 100 ms before at, or one is
-- being taken right now by a transaction that has not committed.
CREATE FUNCTION herald.wake_dispatcher(at timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM FROM herald.outbox_wakeups w
    WHERE w.at <= wake_dispatcher.at - interval '100 milliseconds'
    FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        UPDATE herald.outbox_wakeups SET at = wake_dispatcher.at;
        PERFORM pg_notify('herald_outbox', '');
    END IF;
END
$$;

-- herald.try_publish as in 0003_outbox.sql, but waking the dispatcher
-- through herald.wake_dispatcher.
CREATE OR REPLACE FUNCTION herald.try_publish(
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

    PERFORM herald.wake_dispatcher(v_now);
END
$$;
