-- Endpoint options (issue 19): custom headers sent on every attempt, and a
-- request timeout and retry policy of the endpoint's own.
--
-- headers is a JSON array of {"name", "value"} for a plain header, or
-- {"name", "secret": true, "sealed"} for a secret one, whose value is
-- sealed (package secretbox, bound to the endpoint and the header's name)
-- and stored as standard base64; the store checks names, values and the
-- limits (store.MaxEndpointHeaders, store.MaxEndpointHeaderBytes) before
-- writing. '[]' means none.
--
-- timeout_ms and the retry_* columns override the dispatcher's defaults
-- (--timeout, --retry-base, --retry-cap, --retry-window) for this
-- endpoint; NULL means the default. The API keeps them within the bounds
-- the operator sets, and the dispatcher clamps them to its own again.
--
-- Postgres adds the columns without rewriting the table (the defaults are
-- constants).
ALTER TABLE herald.endpoints
    ADD COLUMN headers jsonb NOT NULL DEFAULT '[]'
        CONSTRAINT endpoints_headers_array CHECK (jsonb_typeof(headers) = 'array'),
    ADD COLUMN timeout_ms integer
        CONSTRAINT endpoints_timeout_ms_range CHECK (timeout_ms BETWEEN 1000 AND 60000),
    ADD COLUMN retry_window_ms bigint CONSTRAINT endpoints_retry_window_ms_positive CHECK (retry_window_ms > 0),
    ADD COLUMN retry_base_ms bigint CONSTRAINT endpoints_retry_base_ms_positive CHECK (retry_base_ms > 0),
    ADD COLUMN retry_cap_ms bigint CONSTRAINT endpoints_retry_cap_ms_positive CHECK (retry_cap_ms > 0);
