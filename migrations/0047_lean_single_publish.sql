-- Publishing one event costs what it did before batches (0019) and
-- channels (0034) came: a quarter of a millisecond of Postgres time, not
-- a millisecond (docs/benchmarks.md, "What each change bought").
--
-- herald.try_publish_many, as in 0036_erasure.sql, but:
--
-- * one event without an idempotency key (outbox.Publish's and the API's
--   common case, and herald.publish's) is inserted by two single-row
--   statements, not by the batch's statement of CTEs over arrays, which
--   cost four times as much for one event;
-- * its statements run with generic plans (plan_cache_mode): PL/pgSQL
--   kept planning the batch's statement afresh on every call, as a
--   custom plan for the arrays it was given looked cheaper than a generic
--   one, and the planning cost more than running it;
-- * an event's body is built by herald.event_body, one definition for
--   both paths, and herald.channels_problem and herald.channels_array,
--   SQL functions that are planned on every call, run only for events
--   that name channels (herald.try_publish passed '[null]' for none).

-- herald.event_body is the JSON body Herald sends for an event, as the
-- publish functions have built it since 0003: type, timestamp (to the
-- second, UTC), object with its id and version, and data. data is the
-- producer's JSON object as Postgres normalised it. An inlined SQL
-- function: it costs what the expression costs.
CREATE FUNCTION herald.event_body(p_type text, p_at timestamptz, p_object_id text, p_version bigint, p_data jsonb)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT '{"type":' || to_json(p_type)::text
        || ',"timestamp":' || to_json(to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))::text
        || ',"object":{"id":' || to_json(p_object_id)::text || ',"version":' || p_version::text || '}'
        || ',"data":' || p_data::text || '}'
$$;

CREATE OR REPLACE FUNCTION herald.try_publish_many(
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
SET plan_cache_mode = force_generic_plan
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
    v_deleted  timestamptz;
    r          record;
    v_id       uuid;
    v_one_version bigint;
    v_one_body text;
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
        IF v_problem IS NULL AND jsonb_typeof(p_channels -> (i - 1)) <> 'null' THEN
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

    SELECT t.deleted_at INTO v_deleted FROM herald.tenants t WHERE t.id = p_tenant FOR KEY SHARE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT NULL::integer, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text,
            'tenant', format('%s does not exist; create the tenant before publishing to it', to_json(p_tenant));
        RETURN;
    END IF;
    IF v_deleted IS NOT NULL THEN
        RETURN QUERY SELECT NULL::integer, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text,
            'tenant', format('%s was deleted at %s and is being erased; it takes no new messages',
                to_json(p_tenant), to_char(v_deleted AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
        RETURN;
    END IF;
    IF v_data IS NULL THEN
        v_data := p_data::jsonb[];
    END IF;

    -- One event without an idempotency key, the common publish: the
    -- batch's statements below in two single-row ones, at a quarter of
    -- their cost for one event.
    IF v_n = 1 AND p_idempotency_keys[1] IS NULL THEN
        v_id := herald.uuid_v7(v_now);
        INSERT INTO herald.object_versions AS ov (tenant_id, object_id, version)
        VALUES (p_tenant, p_object_ids[1], 1)
        ON CONFLICT (tenant_id, object_id) DO UPDATE SET version = ov.version + 1
        RETURNING ov.version INTO v_one_version;
        v_one_body := herald.event_body(p_types[1], v_now, p_object_ids[1], v_one_version, v_data[1]);
        INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, idempotency_key, created_at, traceparent, channels)
        VALUES (v_id, p_tenant, p_types[1], p_object_ids[1], v_one_version, v_one_body, NULL, v_now, p_traceparent,
            CASE WHEN jsonb_typeof(p_channels -> 0) = 'array' THEN herald.channels_array(p_channels -> 0) ELSE '{}'::text[] END);
        PERFORM herald.wake_dispatcher(v_now);
        RETURN QUERY SELECT 0, v_id, v_one_version, false, v_now, v_one_body, NULL::text, NULL::text;
        RETURN;
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
            herald.event_body(p_types[it.i], v_now, it.object_id, it.version, v_data[it.i]) AS body
        FROM items it
    ), inserted AS (
        INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, idempotency_key, created_at, traceparent, channels)
        SELECT v_ids[b.i], p_tenant, p_types[b.i], b.object_id, b.version, b.body, p_idempotency_keys[b.i], v_now, p_traceparent,
            CASE WHEN jsonb_typeof(p_channels -> (b.i - 1)) = 'array' THEN herald.channels_array(p_channels -> (b.i - 1)) ELSE '{}'::text[] END
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
        PERFORM herald.wake_dispatcher(v_now);
    END IF;

    RETURN QUERY SELECT g.i - 1, v_ids[g.i], v_version[g.i], v_dup[g.i], v_created[g.i], v_body[g.i], NULL::text, NULL::text
    FROM generate_series(1, v_n) AS g(i) ORDER BY g.i;
END
$$;


-- herald.try_publish as in 0034_channels_and_filters.sql, passing no
-- channels as NULL rather than as one event's JSON null, and in PL/pgSQL:
-- a SQL function is planned again on every call; herald.publish calls it.
CREATE OR REPLACE FUNCTION herald.try_publish(
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
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    SELECT p.message_id, p.version, p.duplicate, p.problem_field, p.problem
    INTO message_id, version, duplicate, problem_field, problem
    FROM herald.try_publish_many(p_tenant, ARRAY[p_type], ARRAY[p_object_id], ARRAY[p_data], ARRAY[p_idempotency_key], p_traceparent,
        CASE WHEN p_channels IS NOT NULL THEN jsonb_build_array(to_jsonb(p_channels)) END) AS p
    LIMIT 1;
END
$$;
