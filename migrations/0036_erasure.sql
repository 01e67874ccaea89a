-- Erasure in the background (issue 16, item 2): deleting an endpoint or a
-- tenant (a person's right to erasure) marks it deleted at once and leaves
-- its history to a River job (package erasure) that deletes it in bounded
-- batches, each through an index, then the row itself. docs/DESIGN.md,
-- "Erasing an endpoint or a tenant", tells the whole story.
--
-- deleted_at marks a tenant or endpoint being erased: every read of the
-- API, the portal and the dispatcher leaves it out, a deleted endpoint is
-- also disabled (so its queued jobs send nothing), and the row goes when
-- its history is gone.
ALTER TABLE herald.tenants ADD COLUMN deleted_at timestamptz;
ALTER TABLE herald.endpoints ADD COLUMN deleted_at timestamptz;

-- One row per erasure, kept after it completes so that a repeated DELETE
-- and GET /v1/erasures/{id} answer with it. No foreign keys: it outlives
-- what it erased. endpoint_id NULL: the whole tenant. rows_deleted counts
-- the rows of history deleted so far (messages, deliveries, attempts,
-- replay records, and for a tenant its object versions and idempotency
-- keys), updated in the transaction of each batch.
CREATE TABLE herald.erasures (
    id           uuid PRIMARY KEY,
    tenant_id    text NOT NULL,
    endpoint_id  uuid,
    status       text NOT NULL DEFAULT 'running'
                 CONSTRAINT erasures_status CHECK (status IN ('running', 'completed')),
    rows_deleted bigint NOT NULL DEFAULT 0,
    started_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
-- An endpoint id is never reused: one erasure each.
CREATE UNIQUE INDEX erasures_endpoint ON herald.erasures (endpoint_id) WHERE endpoint_id IS NOT NULL;
-- A tenant id may be reused once its erasure completed: one running
-- erasure each, the latest found by started_at.
CREATE INDEX erasures_tenant ON herald.erasures (tenant_id, started_at) WHERE endpoint_id IS NULL;
CREATE UNIQUE INDEX erasures_tenant_running ON herald.erasures (tenant_id) WHERE endpoint_id IS NULL AND status = 'running';

-- The foreign keys from history to the small tables no longer cascade: a
-- cascaded delete was one statement over the endpoint's (or tenant's, or
-- replay's) whole history. They stay, without an action, so that the
-- erasure's last statement, deleting the row, fails while a row of
-- history still refers to it (one written concurrently, say) instead of
-- orphaning it; the erasure then sweeps again. Their checks read the
-- referencing tables' indexes (deliveries_endpoint_created,
-- attempts_endpoint_started, messages_tenant_created,
-- replay_deliveries_pkey). Postgres 15 cannot add a foreign key to a
-- partitioned table without validating it, so the upgrade reads each
-- history table once here.
ALTER TABLE herald.messages DROP CONSTRAINT messages_tenant_id_fkey;
ALTER TABLE herald.messages ADD CONSTRAINT messages_tenant_id_fkey
    FOREIGN KEY (tenant_id) REFERENCES herald.tenants (id);
ALTER TABLE herald.deliveries DROP CONSTRAINT deliveries_endpoint_id_fkey;
ALTER TABLE herald.deliveries ADD CONSTRAINT deliveries_endpoint_id_fkey
    FOREIGN KEY (endpoint_id) REFERENCES herald.endpoints (id);
ALTER TABLE herald.attempts DROP CONSTRAINT attempts_endpoint_id_fkey;
ALTER TABLE herald.attempts ADD CONSTRAINT attempts_endpoint_id_fkey
    FOREIGN KEY (endpoint_id) REFERENCES herald.endpoints (id);
ALTER TABLE herald.replay_deliveries DROP CONSTRAINT replay_deliveries_replay_id_fkey;
ALTER TABLE herald.replay_deliveries ADD CONSTRAINT replay_deliveries_replay_id_fkey
    FOREIGN KEY (replay_id) REFERENCES herald.replays (id);

-- endpoint_count counts the endpoints not deleted: marking one deleted
-- lowers it, and its row's deletion later does not lower it again.
CREATE OR REPLACE FUNCTION herald.count_tenant_endpoints() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE herald.tenants SET endpoint_count = endpoint_count + 1 WHERE id = NEW.tenant_id;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN
            UPDATE herald.tenants SET endpoint_count = endpoint_count - 1 WHERE id = NEW.tenant_id;
        END IF;
    ELSIF OLD.deleted_at IS NULL THEN
        -- A tenant's deletion cascades here after its row is gone; the
        -- update then finds nothing, which is right.
        UPDATE herald.tenants SET endpoint_count = endpoint_count - 1 WHERE id = OLD.tenant_id;
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER endpoints_count_per_tenant ON herald.endpoints;
CREATE TRIGGER endpoints_count_per_tenant AFTER INSERT OR DELETE OR UPDATE OF deleted_at ON herald.endpoints
    FOR EACH ROW EXECUTE FUNCTION herald.count_tenant_endpoints();

-- herald.try_publish_many as in 0034_channels_and_filters.sql, but a
-- tenant being erased takes no new messages: the tenant's row is read
-- FOR KEY SHARE (the lock the messages' foreign key takes anyway), so an
-- erasure that marks it waits for the publishes already past this check,
-- and the publishes after it see the mark.
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
        INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, idempotency_key, created_at, traceparent, channels)
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
        PERFORM herald.wake_dispatcher(v_now);
    END IF;

    RETURN QUERY SELECT g.i - 1, v_ids[g.i], v_version[g.i], v_dup[g.i], v_created[g.i], v_body[g.i], NULL::text, NULL::text
    FROM generate_series(1, v_n) AS g(i) ORDER BY g.i;
END
$$;
