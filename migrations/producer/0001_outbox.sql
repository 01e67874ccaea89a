-- The producer's outbox (split mode, package migrations/producer). A
-- producer's database holds only this: the messages waiting for Herald's
-- relay (herald.outbox), each object's version (herald.object_versions)
-- and the idempotency keys claimed (herald.publish_idempotency_keys).
-- Nothing here is delivered from; Herald's dispatcher relays each message
-- into its own database (package relay) and marks it relayed here.
--
-- The publishing functions have the names, signatures and answers of
-- Herald's own (migrations/0034_channels_and_filters.sql, with
-- try_publish_many as in 0036_erasure.sql), so outbox.Publish and
-- plain-SQL producers work unchanged. One difference: there is no tenants
-- table here, so the tenant is checked by the relay, which refuses a
-- message for a tenant Herald does not have (or is erasing) and records
-- why in herald.outbox.refused.

-- relayed_at is set by the relay once Herald has committed the message;
-- refused says why Herald will not take it (the relay never claims it
-- again; an operator deletes it). The relay claims along outbox_unrelayed
-- in id order and holds back a version whose object has a lower one
-- waiting, found along outbox_unrelayed_object; the source's retention
-- deletes along outbox_relayed.
CREATE TABLE herald.outbox (
    id              uuid PRIMARY KEY,
    tenant_id       text NOT NULL,
    event_type      text NOT NULL,
    object_id       text NOT NULL,
    object_version  bigint NOT NULL,
    body            text NOT NULL,
    idempotency_key text,
    created_at      timestamptz NOT NULL,
    traceparent     text,
    channels        text[] NOT NULL DEFAULT '{}',
    relayed_at      timestamptz,
    refused         text
);
CREATE INDEX outbox_unrelayed ON herald.outbox (id) WHERE relayed_at IS NULL AND refused IS NULL;
CREATE INDEX outbox_unrelayed_object ON herald.outbox (tenant_id, object_id, object_version) WHERE relayed_at IS NULL AND refused IS NULL;
CREATE INDEX outbox_relayed ON herald.outbox (relayed_at) WHERE relayed_at IS NOT NULL;

-- One row per object, kept for the producer's life (the relay's retention
-- never deletes here): a version that restarted at 1 would look stale to
-- every receiver's version guard.
CREATE TABLE herald.object_versions (
    tenant_id text NOT NULL,
    object_id text NOT NULL,
    version   bigint NOT NULL,
    PRIMARY KEY (tenant_id, object_id)
);

-- The keys claimed by keyed publishes, pruned by the relay at Herald's
-- retention horizon (herald.retention_settings in Herald's database), as
-- Herald prunes its own.
CREATE TABLE herald.publish_idempotency_keys (
    tenant_id       text NOT NULL,
    idempotency_key text NOT NULL,
    message_id      uuid NOT NULL,
    object_version  bigint,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, idempotency_key)
);
CREATE INDEX publish_idempotency_keys_created ON herald.publish_idempotency_keys (created_at);

-- herald.wake_relay notifies herald_outbox (outbox.NotifyChannel), which
-- the relay listens on, unless a publish did in the last 10 ms
-- (outbox.NotifyWindow), as Herald's herald.wake_dispatcher does: a
-- notifying commit holds a cluster-wide lock until it is durable.
CREATE TABLE herald.outbox_wakeups (
    singleton boolean PRIMARY KEY DEFAULT true CONSTRAINT outbox_wakeups_singleton CHECK (singleton),
    at        timestamptz NOT NULL
);
INSERT INTO herald.outbox_wakeups (at) VALUES ('-infinity');

CREATE FUNCTION herald.wake_relay(at timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM FROM herald.outbox_wakeups w
    WHERE w.at <= wake_relay.at - interval '10 milliseconds'
    FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        UPDATE herald.outbox_wakeups SET at = wake_relay.at;
        PERFORM pg_notify('herald_outbox', '');
    END IF;
END
$$;

-- herald.uuid_v7 as in Herald's 0003_outbox.sql: ids sort by time, and
-- Herald's history is partitioned by the time in them.
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

-- herald.channels_problem and herald.channels_array as in Herald's
-- 0034_channels_and_filters.sql.
CREATE FUNCTION herald.channels_problem(channels jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
        WHEN channels IS NULL OR jsonb_typeof(channels) = 'null' THEN NULL
        WHEN jsonb_typeof(channels) <> 'array' THEN
            format('is a JSON %s; send an array of channel names, for example ["eu", "project-1"]', jsonb_typeof(channels))
        WHEN jsonb_array_length(channels) > 10 THEN
            format('holds %s channels; a message carries at most 10', jsonb_array_length(channels))
        ELSE (
            SELECT CASE
                WHEN jsonb_typeof(c.v) <> 'string' THEN format('holds a JSON %s; every channel is a string', jsonb_typeof(c.v))
                ELSE format('%s is not a channel name; use 1 to 128 letters, digits, "_", ".", ":" and "-", for example project-1', c.v::text)
            END
            FROM jsonb_array_elements(channels) WITH ORDINALITY AS c(v, i)
            WHERE jsonb_typeof(c.v) <> 'string' OR (c.v #>> '{}') !~ '^[A-Za-z0-9_.:-]{1,128}$'
            ORDER BY c.i
            LIMIT 1)
    END
$$;

-- herald.channels_array is one event's channels as stored: distinct, in
-- order; '{}' for none. channels must have passed channels_problem.
CREATE FUNCTION herald.channels_array(channels jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN jsonb_typeof(channels) = 'array'
        THEN ARRAY(SELECT DISTINCT c.v FROM jsonb_array_elements_text(channels) AS c(v) ORDER BY c.v)
        ELSE '{}'::text[] END
$$;

-- herald.try_publish_many as in Herald's 0036_erasure.sql, into
-- herald.outbox, without the tenant's check (the relay makes it) and
-- waking the relay.
CREATE FUNCTION herald.try_publish_many(
    p_tenant           text,
    p_types            text[],
    p_object_ids       text[],
    p_data             text[],
    p_idempotency_keys text[],
    p_traceparent      text DEFAULT NULL,
    p_channels         jsonb DEFAULT NULL
)
RETURNS TABLE (
    item_index    integer,
    message_id    uuid,
    version       bigint,
    duplicate     boolean,
    created_at    timestamptz,
    body          text,
    problem_field text,
    problem       text
)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_limit    integer := coalesce(nullif(current_setting('herald.max_payload_bytes', true), '')::integer, 262144);
    v_now      timestamptz := clock_timestamp();
    v_n        integer := coalesce(cardinality(p_types), 0);
    v_data     jsonb[];
    v_one      jsonb;
    v_bad      boolean := false;
    v_field    text;
    v_problem  text;
    v_ids      uuid[];
    v_dup      boolean[];
    v_version  bigint[];
    v_created  timestamptz[];
    v_body     text[];
    v_new      integer;
    r          record;
BEGIN
    IF coalesce(cardinality(p_object_ids), 0) <> v_n OR coalesce(cardinality(p_data), 0) <> v_n
       OR coalesce(cardinality(p_idempotency_keys), 0) <> v_n THEN
        RAISE EXCEPTION 'herald.try_publish_many: the four arrays must have one element per event (types %, object_ids %, data %, idempotency_keys %)',
            v_n, coalesce(cardinality(p_object_ids), 0), coalesce(cardinality(p_data), 0), coalesce(cardinality(p_idempotency_keys), 0)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_channels IS NOT NULL AND (jsonb_typeof(p_channels) <> 'array' OR jsonb_array_length(p_channels) <> v_n) THEN
        RAISE EXCEPTION 'herald.try_publish_many: channels must be NULL or a JSON array with one element per event (% events), each null or an array of channel names',
            v_n
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_tenant IS NULL OR p_tenant = '' THEN
        RETURN QUERY SELECT NULL::integer, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text,
            'tenant', 'is empty; name the tenant the event belongs to';
        RETURN;
    END IF;
    IF v_n = 0 THEN
        RETURN QUERY SELECT NULL::integer, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text,
            'events', 'is empty; publish at least one event';
        RETURN;
    END IF;
    IF v_n > 1000 THEN
        RETURN QUERY SELECT NULL::integer, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text,
            'events', format('holds %s events; at most 1000 are published at once, so split them', v_n);
        RETURN;
    END IF;
    IF p_traceparent IS NOT NULL AND p_traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN
        RETURN QUERY SELECT NULL::integer, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text,
            'traceparent', format('%s is not a W3C traceparent; pass one like 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, or NULL', to_json(p_traceparent));
        RETURN;
    END IF;

    -- Parsing every payload at once is the common case; only when one is
    -- not valid JSON are they parsed one by one, to say which.
    BEGIN
        v_data := p_data::jsonb[];
    EXCEPTION WHEN OTHERS THEN
        v_data := NULL;
    END;

    FOR i IN 1..v_n LOOP
        v_field := NULL;
        v_problem := NULL;
        v_one := NULL;
        IF p_types[i] IS NULL OR p_types[i] = '' THEN
            v_field := 'type'; v_problem := 'is empty; name the event, for example invoice.paid';
        ELSIF length(p_types[i]) > 128 THEN
            v_field := 'type'; v_problem := format('is %s characters long; at most 128 are allowed', length(p_types[i]));
        ELSIF p_types[i] !~ '^[a-z0-9][a-z0-9_.-]*$' THEN
            v_field := 'type';
            v_problem := format('%s is malformed; use lower-case letters, digits, ".", "_" and "-", starting with a letter or digit, for example invoice.paid', to_json(p_types[i]));
        ELSIF p_object_ids[i] IS NULL OR p_object_ids[i] = '' THEN
            v_field := 'object_id'; v_problem := 'is empty; name the object the event is about, for example inv_123';
        ELSIF length(p_object_ids[i]) > 256 THEN
            v_field := 'object_id'; v_problem := format('is %s characters long; at most 256 are allowed', length(p_object_ids[i]));
        ELSIF p_idempotency_keys[i] = '' THEN
            v_field := 'idempotency_key'; v_problem := 'is empty; pass NULL for no key';
        ELSIF length(p_idempotency_keys[i]) > 256 THEN
            v_field := 'idempotency_key'; v_problem := format('is %s characters long; at most 256 are allowed', length(p_idempotency_keys[i]));
        ELSIF p_data[i] IS NULL THEN
            v_field := 'data'; v_problem := 'is missing; pass a JSON object, for example {}';
        ELSE
            IF v_data IS NOT NULL THEN
                v_one := v_data[i];
            ELSE
                BEGIN
                    v_one := p_data[i]::jsonb;
                EXCEPTION WHEN OTHERS THEN
                    v_field := 'data'; v_problem := format('is not valid JSON: %s', SQLERRM);
                END;
            END IF;
            IF v_problem IS NULL AND jsonb_typeof(v_one) <> 'object' THEN
                v_field := 'data';
                v_problem := format('is a JSON %s; it must be a JSON object, for example {"id": "inv_123"}', jsonb_typeof(v_one));
            ELSIF v_problem IS NULL AND octet_length(v_one::text) > v_limit THEN
                v_field := 'data';
                v_problem := format('is %s bytes; the limit is %s bytes (herald.max_payload_bytes)', octet_length(v_one::text), v_limit);
            END IF;
        END IF;
        IF v_problem IS NULL AND p_channels IS NOT NULL THEN
            v_problem := herald.channels_problem(p_channels -> (i - 1));
            IF v_problem IS NOT NULL THEN
                v_field := 'channels';
            END IF;
        END IF;
        IF v_problem IS NOT NULL THEN
            v_bad := true;
            RETURN QUERY SELECT i - 1, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text, v_field, v_problem;
        END IF;
    END LOOP;

    FOR r IN
        SELECT k.i, k.first FROM (
            SELECT u.i, min(u.i) OVER (PARTITION BY u.key) AS first
            FROM unnest(p_idempotency_keys) WITH ORDINALITY AS u(key, i)
            WHERE u.key IS NOT NULL AND u.key <> '') AS k
        WHERE k.i > k.first
        ORDER BY k.i
    LOOP
        v_bad := true;
        RETURN QUERY SELECT r.i::integer - 1, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text,
            'idempotency_key', format('repeats the key of item %s; give every event of a batch its own key', r.first - 1);
    END LOOP;
    IF v_bad THEN
        RETURN;
    END IF;

    IF v_data IS NULL THEN
        v_data := p_data::jsonb[];
    END IF;

    v_ids := ARRAY(SELECT herald.uuid_v7(v_now + (g.i - 1) * interval '1 microsecond') FROM generate_series(1, v_n) AS g(i) ORDER BY g.i);
    v_dup := array_fill(false, ARRAY[v_n]);
    v_created := array_fill(v_now, ARRAY[v_n]);

    -- Claim the keys, in key order so that two batches sharing keys lock
    -- them in the same order. A key another transaction holds is waited
    -- for; once that one has committed the key is a duplicate.
    IF EXISTS (SELECT FROM unnest(p_idempotency_keys) AS u(key) WHERE u.key IS NOT NULL) THEN
        WITH claimed AS (
            INSERT INTO herald.publish_idempotency_keys AS k (tenant_id, idempotency_key, message_id, created_at)
            SELECT p_tenant, u.key, v_ids[u.i], v_now
            FROM unnest(p_idempotency_keys) WITH ORDINALITY AS u(key, i)
            WHERE u.key IS NOT NULL
            ORDER BY u.key
            ON CONFLICT DO NOTHING
            RETURNING k.idempotency_key
        )
        SELECT array_agg(u.key IS NOT NULL AND c.idempotency_key IS NULL ORDER BY u.i) INTO v_dup
        FROM unnest(p_idempotency_keys) WITH ORDINALITY AS u(key, i)
        LEFT JOIN claimed c ON c.idempotency_key = u.key;

        FOR r IN
            SELECT u.i, k.message_id, k.object_version, k.created_at
            FROM unnest(p_idempotency_keys) WITH ORDINALITY AS u(key, i)
            JOIN herald.publish_idempotency_keys k ON k.tenant_id = p_tenant AND k.idempotency_key = u.key
            WHERE v_dup[u.i]
        LOOP
            v_ids[r.i] := r.message_id;
            v_created[r.i] := r.created_at;
        END LOOP;
    END IF;

    -- Each object's version rises by its number of new events, under its
    -- row lock (taken in object order); the events get the versions in
    -- between in item order.
    WITH fresh AS (
        SELECT g.i, p_object_ids[g.i] AS object_id
        FROM generate_series(1, v_n) AS g(i) WHERE NOT v_dup[g.i]
    ), counts AS (
        SELECT f.object_id, count(*) AS n FROM fresh f GROUP BY f.object_id
    ), bumped AS (
        INSERT INTO herald.object_versions AS ov (tenant_id, object_id, version)
        SELECT p_tenant, c.object_id, c.n FROM counts c ORDER BY c.object_id
        ON CONFLICT (tenant_id, object_id) DO UPDATE SET version = ov.version + excluded.version
        RETURNING ov.object_id, ov.version
    ), items AS (
        SELECT f.i, f.object_id,
            b.version - c.n + row_number() OVER (PARTITION BY f.object_id ORDER BY f.i) AS version
        FROM fresh f JOIN counts c USING (object_id) JOIN bumped b USING (object_id)
    ), bodies AS (
        SELECT it.i, it.object_id, it.version,
            '{"type":' || to_json(p_types[it.i])::text
            || ',"timestamp":' || to_json(to_char(v_now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))::text
            || ',"object":{"id":' || to_json(it.object_id)::text || ',"version":' || it.version::text || '}'
            || ',"data":' || v_data[it.i]::text || '}' AS body
        FROM items it
    ), inserted AS (
        INSERT INTO herald.outbox (id, tenant_id, event_type, object_id, object_version, body, idempotency_key, created_at, traceparent, channels)
        SELECT v_ids[b.i], p_tenant, p_types[b.i], b.object_id, b.version, b.body, p_idempotency_keys[b.i], v_now, p_traceparent,
            herald.channels_array(p_channels -> (b.i - 1))
        FROM bodies b ORDER BY b.i
    )
    SELECT array_agg(b.version ORDER BY g.i), array_agg(b.body ORDER BY g.i), count(b.i)
    INTO v_version, v_body, v_new
    FROM generate_series(1, v_n) AS g(i) LEFT JOIN bodies b ON b.i = g.i;

    IF EXISTS (SELECT FROM unnest(p_idempotency_keys) AS u(key) WHERE u.key IS NOT NULL) THEN
        UPDATE herald.publish_idempotency_keys k SET object_version = v_version[u.i]
        FROM unnest(p_idempotency_keys) WITH ORDINALITY AS u(key, i)
        WHERE k.tenant_id = p_tenant AND k.idempotency_key = u.key AND NOT v_dup[u.i];
        FOR r IN
            SELECT u.i, k.object_version
            FROM unnest(p_idempotency_keys) WITH ORDINALITY AS u(key, i)
            JOIN herald.publish_idempotency_keys k ON k.tenant_id = p_tenant AND k.idempotency_key = u.key
            WHERE v_dup[u.i]
        LOOP
            v_version[r.i] := r.object_version;
        END LOOP;
    END IF;

    IF v_new > 0 THEN
        PERFORM herald.wake_relay(v_now);
    END IF;

    RETURN QUERY SELECT g.i - 1, v_ids[g.i], v_version[g.i], v_dup[g.i], v_created[g.i], v_body[g.i], NULL::text, NULL::text
    FROM generate_series(1, v_n) AS g(i) ORDER BY g.i;
END
$$;

-- herald.try_publish as in Herald's 0034_channels_and_filters.sql.
CREATE FUNCTION herald.try_publish(
    p_tenant          text,
    p_type            text,
    p_object_id       text,
    p_data            text,
    p_idempotency_key text,
    p_traceparent     text DEFAULT NULL,
    p_channels        text[] DEFAULT NULL,
    OUT message_id    uuid,
    OUT version       bigint,
    OUT duplicate     boolean,
    OUT problem_field text,
    OUT problem       text
)
LANGUAGE sql VOLATILE
AS $$
    SELECT p.message_id, p.version, p.duplicate, p.problem_field, p.problem
    FROM herald.try_publish_many(p_tenant, ARRAY[p_type], ARRAY[p_object_id], ARRAY[p_data], ARRAY[p_idempotency_key], p_traceparent,
        jsonb_build_array(to_jsonb(p_channels))) AS p
    LIMIT 1
$$;

-- herald.publish publishes one event and raises on bad input:
--   SELECT * FROM herald.publish('acme', 'invoice.paid', 'inv_123', '{"amount": 4200}',
--                                channels => ARRAY['eu', 'project-1']);
CREATE FUNCTION herald.publish(
    tenant          text,
    type            text,
    object_id       text,
    data            jsonb,
    idempotency_key text DEFAULT NULL,
    traceparent     text DEFAULT NULL,
    channels        text[] DEFAULT NULL,
    OUT message_id  uuid,
    OUT version     bigint
)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM herald.try_publish(tenant, type, object_id, data::text, idempotency_key, traceparent, channels);
    IF r.problem IS NOT NULL THEN
        RAISE EXCEPTION 'herald.publish: % %', r.problem_field, r.problem
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    message_id := r.message_id;
    version := r.version;
END
$$;

-- herald.publish_many publishes a batch, all or nothing, and raises on bad
-- input; an event may carry channels, a JSON array of names:
--   SELECT * FROM herald.publish_many('acme', '[{"type": "invoice.paid", "object_id": "inv_123", "data": {}, "channels": ["eu"]}]');
CREATE FUNCTION herald.publish_many(
    tenant      text,
    events      jsonb,
    traceparent text DEFAULT NULL
)
RETURNS TABLE (
    item_index integer,
    message_id uuid,
    version    bigint,
    duplicate  boolean
)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_types    text[];
    v_objects  text[];
    v_data     text[];
    v_keys     text[];
    v_channels jsonb;
    v_problems text[];
    r          record;
BEGIN
    IF events IS NULL OR jsonb_typeof(events) <> 'array' THEN
        RAISE EXCEPTION 'herald.publish_many: events must be a JSON array of events, for example [{"type": "invoice.paid", "object_id": "inv_123", "data": {}}], not a JSON %',
            coalesce(jsonb_typeof(events), 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT array_agg(format('events[%s] %s', e.i - 1, e.problem) ORDER BY e.i) INTO v_problems
    FROM (
        SELECT x.i, CASE
            WHEN jsonb_typeof(x.e) <> 'object' THEN format('is a JSON %s; every event must be an object with type, object_id and data', jsonb_typeof(x.e))
            WHEN x.e ? 'type' AND jsonb_typeof(x.e -> 'type') <> 'string' THEN 'type must be a JSON string'
            WHEN x.e ? 'object_id' AND jsonb_typeof(x.e -> 'object_id') <> 'string' THEN 'object_id must be a JSON string'
            WHEN jsonb_typeof(x.e -> 'idempotency_key') NOT IN ('string', 'null') THEN 'idempotency_key must be a JSON string or null'
            WHEN EXISTS (SELECT FROM jsonb_object_keys(x.e) AS k(name) WHERE k.name NOT IN ('type', 'object_id', 'data', 'idempotency_key', 'channels'))
                THEN format('has the unknown field %s; an event has type, object_id, data, idempotency_key and channels',
                    (SELECT to_json(k.name) FROM jsonb_object_keys(x.e) AS k(name) WHERE k.name NOT IN ('type', 'object_id', 'data', 'idempotency_key', 'channels') LIMIT 1))
            END AS problem
        FROM jsonb_array_elements(events) WITH ORDINALITY AS x(e, i)
    ) AS e
    WHERE e.problem IS NOT NULL;
    IF v_problems IS NOT NULL THEN
        RAISE EXCEPTION 'herald.publish_many: %', array_to_string(v_problems, '; ')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT coalesce(array_agg(x.e ->> 'type' ORDER BY x.i), '{}'),
           coalesce(array_agg(x.e ->> 'object_id' ORDER BY x.i), '{}'),
           coalesce(array_agg((x.e -> 'data')::text ORDER BY x.i), '{}'),
           coalesce(array_agg(x.e ->> 'idempotency_key' ORDER BY x.i), '{}'),
           CASE WHEN bool_or(x.e ? 'channels') THEN jsonb_agg(x.e -> 'channels' ORDER BY x.i) END
    INTO v_types, v_objects, v_data, v_keys, v_channels
    FROM jsonb_array_elements(events) WITH ORDINALITY AS x(e, i);

    -- try_publish_many returns problems or results, never both, and
    -- publishes nothing when it returns problems.
    FOR r IN SELECT * FROM herald.try_publish_many(tenant, v_types, v_objects, v_data, v_keys, traceparent, v_channels) LOOP
        IF r.problem IS NOT NULL THEN
            v_problems := v_problems || CASE WHEN r.item_index IS NULL THEN format('%s %s', r.problem_field, r.problem)
                ELSE format('events[%s].%s %s', r.item_index, r.problem_field, r.problem) END;
            CONTINUE;
        END IF;
        item_index := r.item_index;
        message_id := r.message_id;
        version := r.version;
        duplicate := r.duplicate;
        RETURN NEXT;
    END LOOP;
    IF v_problems IS NOT NULL THEN
        RAISE EXCEPTION 'herald.publish_many: %', array_to_string(v_problems, '; ')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
