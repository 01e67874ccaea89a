-- Fair sharing of the dispatcher (issue 18): a tenant's own cap on the
-- attempts in flight, the breaker of endpoints that stopped answering, and
-- the index the fan-out's claim takes tenants in turn by.
--
-- tenants.max_inflight is the tenant's own cap on its attempts running at
-- once in each dispatcher process; NULL means the dispatchers' default
-- (half their workers: dispatcher.Config.MaxInflightPerTenant). Only an
-- operator sets it (PATCH /v1/tenants/{id} {"limits": {"max_inflight": …}}).
ALTER TABLE herald.tenants
    ADD COLUMN max_inflight integer
        CONSTRAINT tenants_max_inflight_positive CHECK (max_inflight > 0);

-- The breaker (package health): unreachable_streak counts the endpoint's
-- latest attempts in a row that got no answer (timed out, or could not
-- connect); at health.BreakerThreshold the breaker opens
-- (breaker_opened_at), and the dispatchers send the endpoint one probe at a
-- time until one is answered, which sets both back. Neither column is
-- indexed, so their updates stay heap-only; they are written only when
-- the breaker's state changes, in the transaction that records the
-- attempt that changed it.
ALTER TABLE herald.endpoints
    ADD COLUMN unreachable_streak integer NOT NULL DEFAULT 0,
    ADD COLUMN breaker_opened_at timestamptz;

-- The fan-out's claim visits the tenants with undispatched messages in
-- turn (a skip scan: one probe per tenant) and takes the oldest of each
-- (dispatcher/queries.go, claimMessages). Like messages_undispatched it
-- holds only the messages not fanned out yet, so it stays small.
CREATE INDEX messages_undispatched_tenant ON herald.messages (tenant_id, created_at, id) WHERE dispatched_at IS NULL;
