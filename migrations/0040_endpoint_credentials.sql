-- Endpoint authentication besides the signature (issue 19, item 2): an
-- Authorization header (static bearer or basic, or OAuth2 client
-- credentials) and mutual TLS. One row per endpoint that has any, in a
-- table of its own so that endpoints without stay as they were and the
-- delivery load joins one primary key. docs/DESIGN.md, "Endpoint
-- authentication", tells the story.
--
-- Secrets are sealed with the operator key (package secretbox, additional
-- data binding them to the endpoint), as signing secrets are:
-- auth_sealed holds the whole endpointauth.Authentication as JSON,
-- auth_public the same without its secrets (what the API shows), and
-- tls_sealed the client certificate and key. The CA bundle is public and
-- stored as it is. A row is never deleted while its endpoint lives (a
-- removal sets its columns to NULL), so that revision only grows: the
-- dispatcher keeps an endpoint's transport and OAuth2 token while its
-- revision is the one it built them for.
CREATE TABLE herald.endpoint_credentials (
    endpoint_id   uuid PRIMARY KEY REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    revision      bigint NOT NULL DEFAULT 1,
    auth_type     text CONSTRAINT endpoint_credentials_auth_type
                  CHECK (auth_type IN ('bearer', 'basic', 'oauth2_client_credentials')),
    auth_public   jsonb,
    auth_sealed   bytea,
    tls_sealed    bytea,
    tls_subject   text,
    tls_not_after timestamptz,
    ca_bundle     text,
    -- tls_expiry_warned_at is when endpoint.certificate_expiring was
    -- published for the current certificate; a new certificate clears it.
    tls_expiry_warned_at timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT endpoint_credentials_auth_whole CHECK ((auth_type IS NULL) = (auth_sealed IS NULL) AND (auth_type IS NULL) = (auth_public IS NULL)),
    CONSTRAINT endpoint_credentials_tls_whole CHECK ((tls_sealed IS NULL) = (tls_not_after IS NULL))
);

-- The dispatcher's expiry check finds the certificates about to lapse that
-- it has not warned of yet.
CREATE INDEX endpoint_credentials_expiring ON herald.endpoint_credentials (tls_not_after)
    WHERE tls_not_after IS NOT NULL AND tls_expiry_warned_at IS NULL;
