-- The range of ids that holds a message's history, for lookups that name
-- the message.
--
-- A message's deliveries and attempts are found by message_id
-- (deliveries_message_endpoint, attempts_message), indexes of each
-- partition. A lookup by message_id alone does not say which partition, so
-- it probed the index of every partition, a few dozen at the default
-- retention: the delivery log's walk of 2,000 messages made 68,000 probes
-- (0.5 s on 2,000,000 deliveries). Their ids carry the message's
-- millisecond (0024, package internal/historyid), so
--   id >= herald.history_lower(m.id) AND id < herald.history_upper(m.id)
-- names one partition, and the planner prunes the others: when it plans,
-- for a message id given as an argument, and at run time, for each row of
-- an outer query (a lateral join or a correlated subquery). The same holds
-- for a delivery's attempts, by the delivery's id.
--
-- The legacy partition (a database upgraded by 0024 with its data) holds
-- rows made before ids carried their message's time: for an id there, the
-- range is the whole legacy partition, from the least id up to its upper
-- bound. That bound never changes once attached, so it is written into the
-- functions as a constant when this migration runs: they stay IMMUTABLE and
-- are inlined into the queries, which run-time pruning needs. Without a
-- legacy partition the constant is the least id and the first branch never
-- holds.
DO $do$
DECLARE
    v_legacy uuid;
BEGIN
    SELECT herald.history_bound(upper_at) INTO v_legacy
    FROM herald.history_partitions WHERE suffix = '_legacy';
    v_legacy := coalesce(v_legacy, '00000000-0000-0000-0000-000000000000');

    EXECUTE format($f$
CREATE FUNCTION herald.history_lower(id uuid)
RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $b$
    SELECT CASE WHEN id < %1$L::uuid THEN '00000000-0000-0000-0000-000000000000'::uuid
                ELSE encode(substring(uuid_send(id) FROM 1 FOR 6) || '\x00000000000000000000'::bytea, 'hex')::uuid END
$b$
$f$, v_legacy);

    EXECUTE format($f$
CREATE FUNCTION herald.history_upper(id uuid)
RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $b$
    SELECT CASE WHEN id < %1$L::uuid THEN %1$L::uuid
                ELSE encode(substring(int8send(('x' || encode(substring(uuid_send(id) FROM 1 FOR 6), 'hex'))::bit(48)::bigint + 1) FROM 3 FOR 6)
                            || '\x00000000000000000000'::bytea, 'hex')::uuid END
$b$
$f$, v_legacy);
END
$do$;

COMMENT ON FUNCTION herald.history_lower(uuid) IS
    'The least id of the history of the row with this id (its millisecond''s first id; the least id in the legacy partition). See migration 0046.';
COMMENT ON FUNCTION herald.history_upper(uuid) IS
    'The id just past the history of the row with this id (the next millisecond''s first id; the legacy partition''s upper bound). See migration 0046.';

-- The least and the greatest of a batch of history ids. A statement that
-- names its rows as id = ANY($1) is planned, once prepared, without
-- knowing them, and Postgres prunes no partition by an array parameter: a
-- batch of 500 deliveries made in the last second was looked up in the
-- primary key of every partition of deliveries (35 index scans for one
-- partition's rows; 32,000 buffers for the delivery worker's load of 512).
-- Adding id BETWEEN herald.least_id($1) AND herald.greatest_id($1), which
-- Postgres evaluates when the statement starts, prunes the partitions
-- outside the batch's span. NULL elements are skipped; an empty or
-- all-NULL array gives NULL, which matches nothing, as = ANY does.
CREATE FUNCTION herald.least_id(ids uuid[])
RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT i FROM unnest(ids) AS i WHERE i IS NOT NULL ORDER BY i LIMIT 1
$$;

CREATE FUNCTION herald.greatest_id(ids uuid[])
RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT i FROM unnest(ids) AS i WHERE i IS NOT NULL ORDER BY i DESC LIMIT 1
$$;
