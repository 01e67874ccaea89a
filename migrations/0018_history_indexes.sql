-- Indexes that bound every query Herald runs on history (messages,
-- deliveries, attempts and what hangs off them) by the rows it needs rather
-- than by the size of the table. docs/history-queries.md lists each query
-- with the index it uses, and a test (historyplans) fails if one
-- of them plans a sequential scan on a filled database.
--
-- Built without CONCURRENTLY, as migrations run in one transaction: on an
-- installation with a long history, writes to these tables wait for the
-- builds (each one scan of its table).

-- Disabling an endpoint (a 410, or failing for the disable period) cancels
-- its pending deliveries inside the transaction that records the attempt
-- and holds the endpoint's lock. Through deliveries_endpoint_created that
-- walked the endpoint's whole history; this index holds the pending ones
-- alone, the endpoint's backlog.
--
-- The price: status is now a column an index depends on, so an update that
-- changes it is no longer heap-only (migration 0010 dropped the earlier
-- version of this index for that reason) and writes an entry in each index
-- of deliveries. An update that leaves status alone (a retry scheduled,
-- a hand-off) stays heap-only. The indexes of deliveries are kept to the
-- four that must exist: the primary key, the (message, endpoint) key, the
-- endpoint's timeline and this one.
CREATE INDEX deliveries_pending ON herald.deliveries (endpoint_id) WHERE status = 'pending';

-- A message's attempts, for the API and the portal's message page. They
-- were found through the message's deliveries and each delivery's attempts.
CREATE INDEX attempts_message ON herald.attempts (message_id, started_at);

-- An endpoint's attempts, newest first, for its attempt list (keyset on
-- (started_at, id)), its charts and the portal's 24-hour counts, which
-- read outcome from the index alone.
DROP INDEX herald.attempts_endpoint_started;
CREATE INDEX attempts_endpoint_started ON herald.attempts (endpoint_id, started_at, id) INCLUDE (outcome);

-- Deleting a delivery (with its endpoint, message or tenant) cascades to
-- replay_deliveries, whose primary key starts with the replay.
CREATE INDEX replay_deliveries_delivery ON herald.replay_deliveries (delivery_id);

-- Every api replica prunes expired idempotency records once a minute.
CREATE INDEX idempotency_records_created ON herald.idempotency_records (created_at);
