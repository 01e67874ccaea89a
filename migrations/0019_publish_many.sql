-- Publishing many events in one statement, and a single publish that is
-- one statement too.
--
-- herald.try_publish_many is now the whole publish operation; try_publish
-- (Go's outbox.Publish) and publish (plain SQL) publish one event through
-- it, herald.publish_many many, and outbox.PublishMany and the API's batch
-- route call it directly. Nothing in it depends on a unique index of
-- herald.messages, so it works the same on a partitioned messages table:
-- idempotency keys are claimed in a table of their own (below), object
-- versions are bumped in herald.object_versions, and the messages
-- themselves are plain inserts.

-- One row per idempotency key ever published, kept apart from the
-- messages so that a key outlives its message's row. The claiming
-- transaction inserts it first (a concurrent publisher of the same key
-- waits here for its commit and then finds it), with object_version NULL
-- until the version is taken a statement later; no other transaction ever
-- sees it NULL.
CREATE TABLE herald.publish_idempotency_keys (
    tenant_id       text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    idempotency_key text NOT NULL,
    message_id      uuid NOT NULL,
    object_version  bigint,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, idempotency_key)
);
INSERT INTO herald.publish_idempotency_keys (tenant_id, idempotency_key, message_id, object_version, created_at)
SELECT tenant_id, idempotency_key, id, object_version, created_at
FROM herald.messages WHERE idempotency_key IS NOT NULL;

-- herald.try_publish_many publishes the events given by the four arrays
-- (item i is types[i], object_ids[i], data[i], idempotency_keys[i]; a NULL
-- key means none) for one tenant, all or nothing, and returns one row per
-- event in order, item_index counting from 0.
--
-- Like try_publish it never raises for bad input. When anything is wrong it
-- publishes nothing and returns only the problems: one row per event at
-- fault (its first problem, item_index set) or one row for the whole batch
-- (item_index NULL: the tenant, or the number of events). At most 1000
-- events (outbox.MaxBatch). A key repeated inside the batch is a problem
-- of the later event, naming the earlier one.
--
-- A key published before, by any transaction, is not published again: its
-- row has duplicate = true and the first message's id, version and
-- created_at, and body NULL. Events about one object take consecutive
-- versions in item order. One notification wakes the dispatcher for the
-- whole batch (herald.wake_dispatcher). Message ids are UUIDv7 one
-- microsecond apart, so the outbox's (created_at, id) order is item order.
CREATE FUNCTION herald.try_publish_many(
    p_tenant           text,
    p_types            text[],
    p_object_ids       text[],
    p_data             text[],
    p_idempotency_keys text[]
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

    PERFORM FROM herald.tenants t WHERE t.id = p_tenant;
    IF NOT FOUND THEN
        RETURN QUERY SELECT NULL::integer, NULL::uuid, NULL::bigint, false, NULL::timestamptz, NULL::text,
            'tenant', format('%s does not exist; create the tenant before publishing to it', to_json(p_tenant));
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
        INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, idempotency_key, created_at)
        SELECT v_ids[b.i], p_tenant, p_types[b.i], b.object_id, b.version, b.body, p_idempotency_keys[b.i], v_now
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

-- herald.try_publish as before (0009_outbox_wakeups.sql), one event
-- through herald.try_publish_many.
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
LANGUAGE sql VOLATILE
AS $$
    SELECT p.message_id, p.version, p.duplicate, p.problem_field, p.problem
    FROM herald.try_publish_many(p_tenant, ARRAY[p_type], ARRAY[p_object_id], ARRAY[p_data], ARRAY[p_idempotency_key]) AS p
    LIMIT 1
$$;

-- herald.publish_many is the batch operation for producers that are not
-- written in Go:
--
--   SELECT * FROM herald.publish_many('acme', '[
--     {"type": "invoice.paid", "object_id": "inv_123", "data": {"amount": 4200}},
--     {"type": "invoice.paid", "object_id": "inv_124", "data": {"amount": 990}, "idempotency_key": "pay_10"}
--   ]');
--
-- events is a JSON array of up to 1000 objects with the fields type,
-- object_id, data and, optionally, idempotency_key. It returns one row per
-- event in order (item_index from 0) with the message's id and the
-- object's version (the first message's, and duplicate = true, for a key
-- published before), and publishes all or nothing: bad input raises
-- invalid_parameter_value (SQLSTATE 22023) naming every event at fault,
-- as events[i].field.
CREATE FUNCTION herald.publish_many(
    tenant text,
    events jsonb
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
            WHEN EXISTS (SELECT FROM jsonb_object_keys(x.e) AS k(name) WHERE k.name NOT IN ('type', 'object_id', 'data', 'idempotency_key'))
                THEN format('has the unknown field %s; an event has type, object_id, data and idempotency_key',
                    (SELECT to_json(k.name) FROM jsonb_object_keys(x.e) AS k(name) WHERE k.name NOT IN ('type', 'object_id', 'data', 'idempotency_key') LIMIT 1))
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
           coalesce(array_agg(x.e ->> 'idempotency_key' ORDER BY x.i), '{}')
    INTO v_types, v_objects, v_data, v_keys
    FROM jsonb_array_elements(events) WITH ORDINALITY AS x(e, i);

    -- try_publish_many returns problems or results, never both, and
    -- publishes nothing when it returns problems.
    FOR r IN SELECT * FROM herald.try_publish_many(tenant, v_types, v_objects, v_data, v_keys) LOOP
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

-- API keys are cached by every api replica (auth.KeyCache); a statement
-- that revokes or deletes keys (a tenant's deletion cascades to its keys)
-- notifies herald_api_keys at its commit, and every cache forgets what it
-- holds. Revocations are rare, so the cluster-wide lock a notifying commit
-- takes (0009_outbox_wakeups.sql) costs nothing that matters here.
CREATE FUNCTION herald.notify_api_key_changes()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_notify('herald_api_keys', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_changed
AFTER UPDATE OR DELETE ON herald.api_keys
FOR EACH STATEMENT EXECUTE FUNCTION herald.notify_api_key_changes();

-- herald.wake_dispatcher as in 0009_outbox_wakeups.sql, with a window of
-- 10 ms (outbox.NotifyWindow) instead of 100 ms. The dispatcher no longer
-- polls every 5 ms for half a second after a notification, which at 50
-- publishes a second never stopped; it drains at the notification and once
-- more after the window (dispatcher/wake.go), so the window is what a
-- publish that did not notify may wait for its fan-out. At most one
-- notifying transaction is in flight at a time (the row lock below), so a
-- shorter window adds notifications but no waiting on the notify lock.
CREATE OR REPLACE FUNCTION herald.wake_dispatcher(at timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM FROM herald.outbox_wakeups w
    WHERE w.at <= wake_dispatcher.at - interval '10 milliseconds'
    FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        UPDATE herald.outbox_wakeups SET at = wake_dispatcher.at;
        PERFORM pg_notify('herald_outbox', '');
    END IF;
END
$$;
