-- Per-tenant retention (issue 16): a tenant may keep its history for less
-- than the dispatchers' --retention, never more.
--
-- History partitions are shared by every tenant and dropped whole at the
-- global retention (0024), so a longer retention for one tenant would need
-- every tenant's history kept that long. A shorter one is a purge of that
-- tenant's settled rows by the maintenance pass (package retention), in
-- bounded batches along messages_tenant_created, the deliveries partitions'
-- (message_id, endpoint_id) indexes, attempts_message and
-- replay_deliveries_delivery: no new index is needed.
--
-- tenants.retention is the tenant's own retention, NULL for the global one.
-- The api refuses one at or above the global retention and one shorter
-- than the retry window plus one partition interval (the same floor as
-- retention.Config.Check); the constraint only keeps it positive.
ALTER TABLE herald.tenants
    ADD COLUMN retention interval
        CONSTRAINT tenants_retention_positive CHECK (retention > interval '0');

-- The dispatchers' retention settings, one row, written by every
-- maintenance pass (so at each dispatcher's start and at least every
-- minute after) and read by the api, which must know the global retention
-- to judge a tenant's own and a replay's start without a flag of its own
-- that could disagree with the dispatchers'. Until a dispatcher has run
-- (recorded_at NULL) it holds the dispatchers' defaults: 30 days, a retry
-- window of 72 hours, partitions of a day.
CREATE TABLE herald.retention_settings (
    singleton          boolean PRIMARY KEY DEFAULT true CONSTRAINT retention_settings_one_row CHECK (singleton),
    retention          interval NOT NULL,
    retry_window       interval NOT NULL,
    partition_interval interval NOT NULL,
    recorded_at        timestamptz
);

INSERT INTO herald.retention_settings (retention, retry_window, partition_interval)
VALUES (interval '720 hours', interval '72 hours', interval '24 hours');
