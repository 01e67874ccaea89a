-- Multi-tenant limits (package limits): a cap on a tenant's endpoints and
-- rate limits on the API's publishes, resends, replays and test events,
-- each with a default set by the api's flags and an override per tenant
-- that only an operator sets.
--
-- max_endpoints is the tenant's own cap (NULL: the api's default). The
-- rate_limits object holds the tenant's own rates by action, e.g.
-- {"publish": {"per_second": 500, "burst": 1000}}; an action missing from
-- it has the default. store validates both.
--
-- endpoint_count is the tenant's number of endpoints, kept by a trigger on
-- every insert and delete however it is made, so the cap is checked on the
-- tenant's row (which creators lock) instead of by counting endpoints: a
-- count in the creating statement would see the snapshot taken before the
-- lock was granted, and two replicas creating at once would both pass.
ALTER TABLE herald.tenants
    ADD COLUMN max_endpoints integer
        CONSTRAINT tenants_max_endpoints_not_negative CHECK (max_endpoints >= 0),
    ADD COLUMN rate_limits jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT tenants_rate_limits_object CHECK (jsonb_typeof(rate_limits) = 'object'),
    ADD COLUMN endpoint_count integer NOT NULL DEFAULT 0;

UPDATE herald.tenants t SET endpoint_count = (SELECT count(*) FROM herald.endpoints e WHERE e.tenant_id = t.id);

CREATE FUNCTION herald.count_tenant_endpoints() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE herald.tenants SET endpoint_count = endpoint_count + 1 WHERE id = NEW.tenant_id;
    ELSE
        -- A tenant's deletion cascades here after its row is gone; the
        -- update then finds nothing, which is right.
        UPDATE herald.tenants SET endpoint_count = endpoint_count - 1 WHERE id = OLD.tenant_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER endpoints_count_per_tenant AFTER INSERT OR DELETE ON herald.endpoints
    FOR EACH ROW EXECUTE FUNCTION herald.count_tenant_endpoints();

-- One GCRA row per tenant and rate-limited action, shared by every api
-- replica, as herald.endpoint_rate_limits is by every dispatcher. tat is the
-- theoretical arrival time of the next request; per_second and burst are
-- the limit the latest ask was judged by, and last_wait what it was told
-- (NULL: let through), kept in the row because RETURNING sees only the row.
-- Rows are few (tenants × 4) and updated in place; no indexed column
-- changes, so with room on the page the updates are heap-only.
CREATE TABLE herald.tenant_rate_limits (
    tenant_id  text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    action     text NOT NULL,
    tat        timestamptz NOT NULL,
    per_second double precision NOT NULL,
    burst      integer NOT NULL,
    last_wait  interval,
    PRIMARY KEY (tenant_id, action)
) WITH (fillfactor = 50);
