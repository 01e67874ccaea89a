-- Ordered delivery per object, opt-in per endpoint (docs/DESIGN.md,
-- "Ordered delivery").
--
-- An endpoint with ordering 'object' receives the deliveries of one object
-- one at a time, in version order. Each (endpoint, object) with a pending
-- delivery is a line: one row of ordered_lines naming its head, the one
-- delivery of the line that has a live job, and rows of ordered_waiting for
-- the others, which have none. Every change to a line locks its row first
-- (lines in (endpoint_id, object_id) order, then deliveries), so the fan-out,
-- the recording of an attempt, a resend and a replay see each other's
-- changes to it whole. A line whose last delivery settles is deleted, so the
-- table holds the backlog's objects, not history.

-- Chosen when the endpoint is created; it cannot change afterwards (the
-- deliveries already queued were made under the other rule).
ALTER TABLE herald.endpoints ADD COLUMN ordering text NOT NULL DEFAULT 'none'
    CONSTRAINT endpoints_ordering CHECK (ordering IN ('none', 'object'));

-- head_delivery_id NULL: the line is parked (its endpoint was disabled when
-- the head's job ran); enabling the endpoint gives the lowest waiting
-- version a job (herald.ordered_resume).
CREATE TABLE herald.ordered_lines (
    endpoint_id      uuid NOT NULL REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    object_id        text NOT NULL,
    head_delivery_id uuid,
    head_version     bigint,
    head_since       timestamptz,
    PRIMARY KEY (endpoint_id, object_id)
);
-- A line by its head, for settling it when the head's attempt is recorded.
CREATE UNIQUE INDEX ordered_lines_head ON herald.ordered_lines (head_delivery_id);
-- Parked lines, for enabling an endpoint.
CREATE INDEX ordered_lines_parked ON herald.ordered_lines (endpoint_id) WHERE head_delivery_id IS NULL;

-- A pending delivery of an ordered endpoint that is not its line's head, in
-- version order; trigger is what its job records when it becomes the head.
-- No foreign key to deliveries (history, partitioned by id range, whose old
-- partitions are dropped): a row whose delivery is gone or settled is
-- skipped and deleted when the line reaches it.
CREATE TABLE herald.ordered_waiting (
    endpoint_id    uuid NOT NULL REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    object_id      text NOT NULL,
    object_version bigint NOT NULL,
    delivery_id    uuid NOT NULL,
    trigger        text NOT NULL CONSTRAINT ordered_waiting_trigger CHECK (trigger IN ('scheduled', 'manual', 'replay')),
    PRIMARY KEY (endpoint_id, object_id, object_version)
);
CREATE UNIQUE INDEX ordered_waiting_delivery ON herald.ordered_waiting (delivery_id);

-- A head sends only once no lower version of its object waits to be fanned
-- out (a concurrent fan-out may commit it after the head's): the gate asks
-- this index. It holds the outbox's backlog only.
CREATE INDEX messages_undispatched_object ON herald.messages (tenant_id, object_id, object_version)
    WHERE dispatched_at IS NULL;

-- ordered_advance gives a line with no head (locked by the caller) its next
-- head: the lowest waiting version whose delivery is still pending. It
-- returns that delivery, for the caller to give a job, or nothing; a line
-- left with neither head nor waiting version is deleted.
CREATE FUNCTION herald.ordered_advance(p_endpoint uuid, p_object text)
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql AS $$
DECLARE
    w record;
BEGIN
    PERFORM FROM herald.ordered_lines l
    WHERE l.endpoint_id = p_endpoint AND l.object_id = p_object AND l.head_delivery_id IS NOT NULL;
    IF FOUND THEN
        RETURN;
    END IF;
    LOOP
        SELECT ow.object_version, ow.delivery_id, ow.trigger INTO w
        FROM herald.ordered_waiting ow
        WHERE ow.endpoint_id = p_endpoint AND ow.object_id = p_object
        ORDER BY ow.object_version LIMIT 1;
        IF NOT FOUND THEN
            DELETE FROM herald.ordered_lines l WHERE l.endpoint_id = p_endpoint AND l.object_id = p_object;
            RETURN;
        END IF;
        DELETE FROM herald.ordered_waiting ow WHERE ow.delivery_id = w.delivery_id;
        SELECT d.generation, d.next_attempt_at IS NULL AND d.attempt_count = d.attempts_before_requeue
        INTO new_generation, new_batchable
        FROM herald.deliveries d WHERE d.id = w.delivery_id AND d.status = 'pending';
        IF FOUND THEN
            UPDATE herald.ordered_lines l
            SET head_delivery_id = w.delivery_id, head_version = w.object_version, head_since = now()
            WHERE l.endpoint_id = p_endpoint AND l.object_id = p_object;
            new_head := w.delivery_id;
            new_endpoint := p_endpoint;
            new_trigger := w.trigger;
            RETURN NEXT;
            RETURN;
        END IF;
    END LOOP;
END
$$;

-- ordered_lock locks the lines of the messages p_messages to the endpoint
-- p_endpoint, if it is ordered (creating the lines that do not exist), in
-- object order, so that a caller about to lock deliveries holds their lines
-- first, as every writer of a line does.
CREATE FUNCTION herald.ordered_lock(p_endpoint uuid, p_messages uuid[])
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO herald.ordered_lines AS l (endpoint_id, object_id)
    SELECT DISTINCT e.id, m.object_id
    FROM herald.messages m
    JOIN herald.endpoints e ON e.id = p_endpoint AND e.ordering = 'object'
    WHERE m.id = ANY (p_messages)
    ORDER BY 1, 2
    ON CONFLICT (endpoint_id, object_id) DO UPDATE SET head_since = l.head_since
$$;

-- ordered_join puts the pending deliveries p_deliveries of ordered endpoints
-- in their lines, in version order, and returns those that became the head
-- of their line (or already were: a resend of the head), for the caller to
-- give jobs; the others wait. A version below the head goes ahead of it
-- only with p_preempt, which the fan-out passes: a version it fans out was
-- not yet fanned out when the head's job last looked, so the head has sent
-- nothing (see the gate), and it goes back to waiting in a new generation,
-- which ends its job. A resend or replay of a version below the head waits
-- behind it: the head may have a request in flight.
CREATE FUNCTION herald.ordered_join(p_deliveries uuid[], p_trigger text, p_preempt boolean)
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    h uuid;
    hv bigint;
BEGIN
    FOR r IN
        SELECT d.id, d.endpoint_id, m.object_id, m.object_version
        FROM herald.deliveries d
        JOIN herald.messages m ON m.id = d.message_id
        JOIN herald.endpoints e ON e.id = d.endpoint_id AND e.ordering = 'object'
        WHERE d.id = ANY (p_deliveries) AND d.status = 'pending'
        ORDER BY d.endpoint_id, m.object_id, m.object_version
    LOOP
        INSERT INTO herald.ordered_lines AS l (endpoint_id, object_id) VALUES (r.endpoint_id, r.object_id)
        ON CONFLICT (endpoint_id, object_id) DO UPDATE SET head_since = l.head_since;
        SELECT l.head_delivery_id, l.head_version INTO h, hv
        FROM herald.ordered_lines l WHERE l.endpoint_id = r.endpoint_id AND l.object_id = r.object_id;
        IF h = r.id THEN
            RETURN QUERY
                SELECT d.id, d.endpoint_id, d.generation,
                    d.next_attempt_at IS NULL AND d.attempt_count = d.attempts_before_requeue, p_trigger
                FROM herald.deliveries d WHERE d.id = r.id;
            CONTINUE;
        END IF;
        IF h IS NOT NULL AND p_preempt AND hv > r.object_version THEN
            UPDATE herald.deliveries d SET generation = d.generation + 1, updated_at = now()
            WHERE d.id = h AND d.status = 'pending';
            INSERT INTO herald.ordered_waiting (endpoint_id, object_id, object_version, delivery_id, trigger)
            VALUES (r.endpoint_id, r.object_id, hv, h, 'scheduled')
            ON CONFLICT DO NOTHING;
            UPDATE herald.ordered_lines l SET head_delivery_id = NULL, head_version = NULL, head_since = NULL
            WHERE l.endpoint_id = r.endpoint_id AND l.object_id = r.object_id;
            h := NULL;
        END IF;
        INSERT INTO herald.ordered_waiting (endpoint_id, object_id, object_version, delivery_id, trigger)
        VALUES (r.endpoint_id, r.object_id, r.object_version, r.id, p_trigger)
        ON CONFLICT (delivery_id) DO UPDATE SET trigger = excluded.trigger;
        IF h IS NULL THEN
            RETURN QUERY SELECT * FROM herald.ordered_advance(r.endpoint_id, r.object_id);
        END IF;
    END LOOP;
END
$$;

-- ordered_settle takes the settled deliveries p_deliveries (succeeded, or
-- given up) out of their lines, whose rows the caller locked first, and
-- returns each line's next head, for the caller to give a job.
CREATE FUNCTION herald.ordered_settle(p_deliveries uuid[])
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT l.endpoint_id, l.object_id
        FROM herald.ordered_lines l
        WHERE l.head_delivery_id = ANY (p_deliveries)
        ORDER BY l.endpoint_id, l.object_id
        FOR UPDATE
    LOOP
        UPDATE herald.ordered_lines l SET head_delivery_id = NULL, head_version = NULL, head_since = NULL
        WHERE l.endpoint_id = r.endpoint_id AND l.object_id = r.object_id;
        RETURN QUERY SELECT * FROM herald.ordered_advance(r.endpoint_id, r.object_id);
    END LOOP;
    DELETE FROM herald.ordered_waiting ow WHERE ow.delivery_id = ANY (p_deliveries);
END
$$;

-- ordered_park puts the head p_delivery (version p_version) of its line back
-- to waiting and leaves the line without a head: its endpoint is disabled,
-- and the line holds until it is enabled. It returns whether it parked.
CREATE FUNCTION herald.ordered_park(p_endpoint uuid, p_object text, p_version bigint, p_delivery uuid)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM FROM herald.ordered_lines l
    WHERE l.endpoint_id = p_endpoint AND l.object_id = p_object AND l.head_delivery_id = p_delivery
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE herald.ordered_lines l SET head_delivery_id = NULL, head_version = NULL, head_since = NULL
    WHERE l.endpoint_id = p_endpoint AND l.object_id = p_object;
    INSERT INTO herald.ordered_waiting (endpoint_id, object_id, object_version, delivery_id, trigger)
    VALUES (p_endpoint, p_object, p_version, p_delivery, 'scheduled')
    ON CONFLICT DO NOTHING;
    RETURN true;
END
$$;

-- ordered_resume gives every parked line of the enabled endpoint p_endpoint
-- (or only its line of p_object, when not NULL) its next head, and returns
-- them for the caller to give jobs.
CREATE FUNCTION herald.ordered_resume(p_endpoint uuid, p_object text)
RETURNS TABLE (new_head uuid, new_endpoint uuid, new_generation integer, new_batchable boolean, new_trigger text)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT l.object_id
        FROM herald.ordered_lines l
        JOIN herald.endpoints e ON e.id = l.endpoint_id AND e.enabled
        WHERE l.endpoint_id = p_endpoint AND l.head_delivery_id IS NULL
          AND (p_object IS NULL OR l.object_id = p_object)
        ORDER BY l.object_id
        FOR UPDATE OF l
    LOOP
        RETURN QUERY SELECT * FROM herald.ordered_advance(p_endpoint, r.object_id);
    END LOOP;
END
$$;
