-- Operator sessions for the queue dashboard (issue 22, item 4): an operator
-- signs in on /riverui/ with an operator API key once, and the browser
-- keeps a session token instead of the key itself. Only the token's
-- SHA-256 is stored, as for API keys and portal sessions. A session is good
-- until expires_at, while its key is an active operator key: revoking the
-- key (or the key that made it) ends its sessions at once.
CREATE TABLE herald.operator_sessions (
    token_hash bytea PRIMARY KEY,
    api_key_id uuid NOT NULL REFERENCES herald.api_keys (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
-- A revocation deletes its keys' sessions by key; signing in prunes the
-- expired ones.
CREATE INDEX operator_sessions_api_key ON herald.operator_sessions (api_key_id);
CREATE INDEX operator_sessions_expires ON herald.operator_sessions (expires_at);
