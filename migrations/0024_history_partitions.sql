-- History partitioned by time.
--
-- messages, deliveries, attempts and replay_deliveries become native range
-- partitioned tables, partitioned by their UUIDv7 ids (replay_deliveries by
-- delivery_id). A UUIDv7 starts with 48 bits of unix milliseconds, so a
-- range of ids is a range of time: the partition for [a, b) holds the ids
-- from herald.history_bound(a) (a's milliseconds, then zeros) up to
-- herald.history_bound(b).
--
-- The four tables share their partition bounds, and every row of a message's
-- history carries the message's time: a delivery's id starts with its
-- message id's 48 bits of milliseconds, an attempt's with its delivery's
-- (package internal/historyid). So one message's deliveries, attempts and
-- replay records all live in the partitions of the message's range, and a
-- range is dropped as a set (package retention) once it is past retention
-- and settled: no undispatched message, no pending delivery.
--
-- What a partitioned table cannot have, and what replaces it:
--   * UNIQUE (message_id, endpoint_id) on deliveries: a unique constraint of
--     a partitioned table must contain the partition key. Each deliveries
--     partition has it as a unique index of its own instead; since all of a
--     message's deliveries are in one partition, that is the same guarantee.
--     Inserts use ON CONFLICT DO NOTHING without a target, which arbitrates
--     on the partition's unique indexes.
--   * UNIQUE (tenant_id, idempotency_key) on messages: publish idempotency
--     keys are claimed in herald.publish_idempotency_keys (0019) since
--     herald.try_publish_many; the constraint had become a second copy. It
--     is dropped; the keys table keeps its own lifetime (pruned by package
--     retention, by created_at through publish_idempotency_keys_created).
--   * Foreign keys between history tables (deliveries → messages, attempts →
--     deliveries, replay_deliveries → deliveries): Postgres refuses to drop
--     a partition another table's foreign key references, and detaching it
--     first checks the whole referencing table. The sets are consistent by
--     construction (dropped together, erased together by package retention)
--     instead. Foreign keys to the small tables stay (messages → tenants,
--     deliveries → endpoints, replay_deliveries → replays), and attempts
--     gain one to endpoints so that deleting an endpoint still removes its
--     attempts.
--
-- Upgrading in place: the existing tables are renamed *_p_legacy and
-- attached, unchanged, as the first partition of each new table, covering
-- every id up to just past the newest one (rows are not copied; attaching
-- checks each table once, without rewriting it, and reuses its indexes).
-- Rows made later for a legacy message carry its id's time and so land in
-- the legacy partition too. A database without history gets no legacy
-- partition.
--
-- Each table also has a DEFAULT partition (*_p_default), a safety net: a
-- row whose range has no partition yet (the maintenance job did not run far
-- enough ahead) lands there instead of failing its insert, and a row made
-- for a range already dropped lands there instead of being lost. The
-- maintenance never drops it.

-- The partitions of the history, one row per range; the same suffix names
-- the partition of each of the four tables: messages_p20261203_000000, or
-- messages_p_legacy for the suffix _legacy.
CREATE TABLE herald.history_partitions (
    suffix     text PRIMARY KEY,
    -- NULL: from the first id (the legacy partition).
    lower_at   timestamptz,
    upper_at   timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT history_partitions_range CHECK (lower_at < upper_at)
);
CREATE INDEX history_partitions_upper ON herald.history_partitions (upper_at);

-- herald.history_bound is the smallest UUIDv7 of the millisecond at.
CREATE FUNCTION herald.history_bound(at timestamptz)
RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT encode(substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3 FOR 6)
        || '\x00000000000000000000'::bytea, 'hex')::uuid
$$;

-- herald.history_time is the millisecond a UUIDv7 was made in.
CREATE FUNCTION herald.history_time(id uuid)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT to_timestamp(('x' || substring(replace(id::text, '-', '') FROM 1 FOR 12))::bit(48)::bigint / 1000.0)
$$;

-- The publish idempotency keys outlive the partitions of their messages and
-- are pruned by age.
CREATE INDEX publish_idempotency_keys_created ON herald.publish_idempotency_keys (created_at);

-- The old tables, renamed to become the legacy partitions, lose what a
-- partition cannot or should not have.
ALTER TABLE herald.deliveries DROP CONSTRAINT deliveries_message_id_fkey;
ALTER TABLE herald.attempts DROP CONSTRAINT attempts_delivery_id_fkey;
ALTER TABLE herald.replay_deliveries DROP CONSTRAINT replay_deliveries_delivery_id_fkey;
ALTER TABLE herald.messages DROP CONSTRAINT messages_idempotency_key;

ALTER TABLE herald.messages RENAME TO messages_p_legacy;
ALTER TABLE herald.messages_p_legacy RENAME CONSTRAINT messages_pkey TO messages_p_legacy_pkey;
ALTER INDEX herald.messages_undispatched RENAME TO messages_p_legacy_undispatched;
ALTER INDEX herald.messages_tenant_created RENAME TO messages_p_legacy_tenant_created;

ALTER TABLE herald.deliveries RENAME TO deliveries_p_legacy;
ALTER TABLE herald.deliveries_p_legacy RENAME CONSTRAINT deliveries_pkey TO deliveries_p_legacy_pkey;
ALTER TABLE herald.deliveries_p_legacy RENAME CONSTRAINT deliveries_message_endpoint TO deliveries_p_legacy_message_endpoint;
ALTER INDEX herald.deliveries_endpoint_created RENAME TO deliveries_p_legacy_endpoint_created;
ALTER INDEX herald.deliveries_pending RENAME TO deliveries_p_legacy_pending;

ALTER TABLE herald.attempts RENAME TO attempts_p_legacy;
ALTER TABLE herald.attempts_p_legacy RENAME CONSTRAINT attempts_pkey TO attempts_p_legacy_pkey;
ALTER INDEX herald.attempts_delivery RENAME TO attempts_p_legacy_delivery;
ALTER INDEX herald.attempts_endpoint_started RENAME TO attempts_p_legacy_endpoint_started;
ALTER INDEX herald.attempts_message RENAME TO attempts_p_legacy_message;

ALTER TABLE herald.replay_deliveries RENAME TO replay_deliveries_p_legacy;
ALTER TABLE herald.replay_deliveries_p_legacy RENAME CONSTRAINT replay_deliveries_pkey TO replay_deliveries_p_legacy_pkey;
ALTER INDEX herald.replay_deliveries_delivery RENAME TO replay_deliveries_p_legacy_delivery;

-- The partitioned tables, with the columns, defaults and checks of the old.
CREATE TABLE herald.messages (LIKE herald.messages_p_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
    PARTITION BY RANGE (id);
ALTER TABLE herald.messages ADD CONSTRAINT messages_pkey PRIMARY KEY (id);
ALTER TABLE herald.messages ADD CONSTRAINT messages_tenant_id_fkey
    FOREIGN KEY (tenant_id) REFERENCES herald.tenants (id) ON DELETE CASCADE;
CREATE INDEX messages_undispatched ON herald.messages (created_at, id) WHERE dispatched_at IS NULL;
CREATE INDEX messages_tenant_created ON herald.messages (tenant_id, created_at, id);

CREATE TABLE herald.deliveries (LIKE herald.deliveries_p_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
    PARTITION BY RANGE (id);
ALTER TABLE herald.deliveries ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id);
ALTER TABLE herald.deliveries ADD CONSTRAINT deliveries_endpoint_id_fkey
    FOREIGN KEY (endpoint_id) REFERENCES herald.endpoints (id) ON DELETE CASCADE;
CREATE INDEX deliveries_endpoint_created ON herald.deliveries (endpoint_id, created_at, id);
CREATE INDEX deliveries_pending ON herald.deliveries (endpoint_id) WHERE status = 'pending';

CREATE TABLE herald.attempts (LIKE herald.attempts_p_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
    PARTITION BY RANGE (id);
ALTER TABLE herald.attempts ADD CONSTRAINT attempts_pkey PRIMARY KEY (id);
ALTER TABLE herald.attempts ADD CONSTRAINT attempts_endpoint_id_fkey
    FOREIGN KEY (endpoint_id) REFERENCES herald.endpoints (id) ON DELETE CASCADE;
CREATE INDEX attempts_delivery ON herald.attempts (delivery_id, attempt_number);
CREATE INDEX attempts_endpoint_started ON herald.attempts (endpoint_id, started_at, id) INCLUDE (outcome);
CREATE INDEX attempts_message ON herald.attempts (message_id, started_at);

CREATE TABLE herald.replay_deliveries (LIKE herald.replay_deliveries_p_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
    PARTITION BY RANGE (delivery_id);
ALTER TABLE herald.replay_deliveries ADD CONSTRAINT replay_deliveries_pkey PRIMARY KEY (replay_id, delivery_id);
ALTER TABLE herald.replay_deliveries ADD CONSTRAINT replay_deliveries_replay_id_fkey
    FOREIGN KEY (replay_id) REFERENCES herald.replays (id) ON DELETE CASCADE;
CREATE INDEX replay_deliveries_delivery ON herald.replay_deliveries (delivery_id);

-- The legacy partitions: attached when there is history, else dropped. The
-- upper bound is the first whole second after the newest id of any of the
-- tables (their primary keys find it in one probe each).
DO $$
DECLARE
    v_newest timestamptz;
    v_upper  timestamptz;
BEGIN
    SELECT max(herald.history_time(t.id)) INTO v_newest FROM (
        (SELECT id FROM herald.messages_p_legacy ORDER BY id DESC LIMIT 1)
        UNION ALL (SELECT id FROM herald.deliveries_p_legacy ORDER BY id DESC LIMIT 1)
        UNION ALL (SELECT id FROM herald.attempts_p_legacy ORDER BY id DESC LIMIT 1)
        UNION ALL (SELECT delivery_id FROM herald.replay_deliveries_p_legacy ORDER BY delivery_id DESC LIMIT 1)
    ) AS t;
    IF v_newest IS NULL THEN
        DROP TABLE herald.replay_deliveries_p_legacy, herald.attempts_p_legacy,
            herald.deliveries_p_legacy, herald.messages_p_legacy;
        RETURN;
    END IF;
    v_upper := date_trunc('second', v_newest) + interval '1 second';
    EXECUTE format('ALTER TABLE herald.messages ATTACH PARTITION herald.messages_p_legacy FOR VALUES FROM (MINVALUE) TO (%L)', herald.history_bound(v_upper));
    EXECUTE format('ALTER TABLE herald.deliveries ATTACH PARTITION herald.deliveries_p_legacy FOR VALUES FROM (MINVALUE) TO (%L)', herald.history_bound(v_upper));
    EXECUTE format('ALTER TABLE herald.attempts ATTACH PARTITION herald.attempts_p_legacy FOR VALUES FROM (MINVALUE) TO (%L)', herald.history_bound(v_upper));
    EXECUTE format('ALTER TABLE herald.replay_deliveries ATTACH PARTITION herald.replay_deliveries_p_legacy FOR VALUES FROM (MINVALUE) TO (%L)', herald.history_bound(v_upper));
    INSERT INTO herald.history_partitions (suffix, lower_at, upper_at) VALUES ('_legacy', NULL, v_upper);
END
$$;

-- The default partitions.
CREATE TABLE herald.messages_p_default PARTITION OF herald.messages DEFAULT;
CREATE TABLE herald.deliveries_p_default PARTITION OF herald.deliveries DEFAULT WITH (fillfactor = 50);
CREATE UNIQUE INDEX deliveries_p_default_message_endpoint ON herald.deliveries_p_default (message_id, endpoint_id);
CREATE TABLE herald.attempts_p_default PARTITION OF herald.attempts DEFAULT;
CREATE TABLE herald.replay_deliveries_p_default PARTITION OF herald.replay_deliveries DEFAULT;

-- herald.create_history_partitions creates the partition sets that cover
-- [p_from, p_to) in ranges of p_interval aligned to the unix epoch (1 day:
-- UTC midnights), leaving alone what existing partitions cover: a range
-- that overlaps one is shortened to the part before or after it. A range
-- for which the default partitions already hold rows is skipped (attaching
-- it would fail); those rows stay in the default partitions. It returns the
-- suffixes it created.
--
-- A partition is created apart and then attached, which takes a SHARE
-- UPDATE EXCLUSIVE lock on the parent (reads and writes go on) and checks
-- the default partition, normally empty.
CREATE FUNCTION herald.create_history_partitions(p_from timestamptz, p_to timestamptz, p_interval interval)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_step   double precision := extract(epoch FROM p_interval);
    v_start  timestamptz;
    v_lo     timestamptz;
    v_hi     timestamptz;
    v_suffix text;
    v_table  text;
BEGIN
    IF v_step < 1 THEN
        RAISE EXCEPTION 'herald.create_history_partitions: the interval must be at least 1 second, got %', p_interval
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_start := to_timestamp(floor(extract(epoch FROM p_from) / v_step) * v_step);
    WHILE v_start < p_to LOOP
        v_lo := v_start;
        v_hi := v_start + p_interval;
        v_start := v_hi;
        -- Past every partition that contains the range's start, and up to
        -- the first that starts inside it.
        v_lo := greatest(v_lo, coalesce((SELECT max(p.upper_at) FROM herald.history_partitions p
            WHERE coalesce(p.lower_at, '-infinity') <= v_lo AND p.upper_at > v_lo), v_lo));
        v_hi := least(v_hi, coalesce((SELECT min(p.lower_at) FROM herald.history_partitions p
            WHERE p.lower_at >= v_lo AND p.lower_at < v_hi), v_hi));
        CONTINUE WHEN v_lo >= v_hi;
        CONTINUE WHEN EXISTS (SELECT FROM herald.messages_p_default m WHERE m.id >= herald.history_bound(v_lo) AND m.id < herald.history_bound(v_hi))
            OR EXISTS (SELECT FROM herald.deliveries_p_default d WHERE d.id >= herald.history_bound(v_lo) AND d.id < herald.history_bound(v_hi))
            OR EXISTS (SELECT FROM herald.attempts_p_default a WHERE a.id >= herald.history_bound(v_lo) AND a.id < herald.history_bound(v_hi))
            OR EXISTS (SELECT FROM herald.replay_deliveries_p_default r WHERE r.delivery_id >= herald.history_bound(v_lo) AND r.delivery_id < herald.history_bound(v_hi));

        v_suffix := to_char(v_lo AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS');
        FOREACH v_table IN ARRAY ARRAY['messages', 'deliveries', 'attempts', 'replay_deliveries'] LOOP
            EXECUTE format('CREATE TABLE herald.%I (LIKE herald.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)%s',
                v_table || '_p' || v_suffix, v_table, CASE WHEN v_table = 'deliveries' THEN ' WITH (fillfactor = 50)' ELSE '' END);
            IF v_table = 'deliveries' THEN
                EXECUTE format('CREATE UNIQUE INDEX %I ON herald.%I (message_id, endpoint_id)',
                    'deliveries_p' || v_suffix || '_message_endpoint', 'deliveries_p' || v_suffix);
            END IF;
            EXECUTE format('ALTER TABLE herald.%I ATTACH PARTITION herald.%I FOR VALUES FROM (%L) TO (%L)',
                v_table, v_table || '_p' || v_suffix, herald.history_bound(v_lo), herald.history_bound(v_hi));
        END LOOP;
        INSERT INTO herald.history_partitions (suffix, lower_at, upper_at) VALUES (v_suffix, v_lo, v_hi);
        RETURN NEXT v_suffix;
    END LOOP;
END
$$;

-- herald.drop_history_partitions drops the partition set named p_suffix if
-- it ended at or before p_horizon and is settled: no undispatched message
-- and no pending delivery. It returns 'dropped', or why not: 'missing',
-- 'retained' (it ends after the horizon), 'undispatched' or 'pending'.
--
-- It first takes the parents' ACCESS EXCLUSIVE locks (dropping a partition
-- needs them anyway), in the order the pipeline takes its locks. Every
-- transaction that writes history holds a lock on a parent until it ends, so
-- once they are granted every row ever written to the partitions has
-- committed or rolled back, and none can be written until the drop commits:
-- the checks then see all there is. Without the locks first, a row whose id
-- was made before the check but committed after it (a UUIDv7 is made before
-- its transaction commits) would be dropped unseen. A row made for the
-- range after the drop lands in the default partition. Call it in a
-- transaction of its own with a short lock_timeout: while it waits for the
-- locks, history's readers and writers queue behind it.
CREATE FUNCTION herald.drop_history_partitions(p_suffix text, p_horizon timestamptz)
RETURNS text
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_upper  timestamptz;
    v_found  boolean;
BEGIN
    LOCK TABLE herald.messages, herald.deliveries, herald.attempts, herald.replay_deliveries IN ACCESS EXCLUSIVE MODE;
    SELECT p.upper_at INTO v_upper FROM herald.history_partitions p WHERE p.suffix = p_suffix FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'missing';
    END IF;
    IF v_upper > p_horizon THEN
        RETURN 'retained';
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT FROM herald.%I WHERE dispatched_at IS NULL)', 'messages_p' || p_suffix) INTO v_found;
    IF v_found THEN
        RETURN 'undispatched';
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT FROM herald.%I WHERE status = ''pending'')', 'deliveries_p' || p_suffix) INTO v_found;
    IF v_found THEN
        RETURN 'pending';
    END IF;
    EXECUTE format('DROP TABLE herald.%I, herald.%I, herald.%I, herald.%I',
        'replay_deliveries_p' || p_suffix, 'attempts_p' || p_suffix, 'deliveries_p' || p_suffix, 'messages_p' || p_suffix);
    DELETE FROM herald.history_partitions p WHERE p.suffix = p_suffix;
    RETURN 'dropped';
END
$$;

-- herald.drop_empty_history_partitions drops the partition set named
-- p_suffix if none of its four partitions holds a row, under the same locks
-- as herald.drop_history_partitions, and reports whether it did. The
-- maintenance uses it to remake partitions that have not begun yet when the
-- interval changed.
CREATE FUNCTION herald.drop_empty_history_partitions(p_suffix text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_found boolean;
BEGIN
    LOCK TABLE herald.messages, herald.deliveries, herald.attempts, herald.replay_deliveries IN ACCESS EXCLUSIVE MODE;
    PERFORM FROM herald.history_partitions p WHERE p.suffix = p_suffix FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT FROM herald.%I) OR EXISTS (SELECT FROM herald.%I) OR EXISTS (SELECT FROM herald.%I) OR EXISTS (SELECT FROM herald.%I)',
        'messages_p' || p_suffix, 'deliveries_p' || p_suffix, 'attempts_p' || p_suffix, 'replay_deliveries_p' || p_suffix) INTO v_found;
    IF v_found THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP TABLE herald.%I, herald.%I, herald.%I, herald.%I',
        'replay_deliveries_p' || p_suffix, 'attempts_p' || p_suffix, 'deliveries_p' || p_suffix, 'messages_p' || p_suffix);
    DELETE FROM herald.history_partitions p WHERE p.suffix = p_suffix;
    RETURN true;
END
$$;

-- The first partitions, a day each from today; the dispatchers' maintenance
-- makes the rest with their own interval (and remakes those that have not
-- begun yet with it).
SELECT herald.create_history_partitions(now(), now() + interval '3 days', interval '1 day');
