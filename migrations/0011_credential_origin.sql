-- Which API key made each credential, so that revoking a key revokes
-- everything it made: the keys it created (and theirs, transitively), the
-- portal links it minted that were not opened yet, and the portal sessions
-- opened with its links. NULL means no key made it: the bootstrap key, keys
-- and links made by programs, and every credential made before this
-- migration.
ALTER TABLE herald.api_keys
    ADD COLUMN created_by uuid REFERENCES herald.api_keys (id) ON DELETE CASCADE;
ALTER TABLE herald.portal_links
    ADD COLUMN created_by uuid REFERENCES herald.api_keys (id) ON DELETE CASCADE;
ALTER TABLE herald.portal_sessions
    ADD COLUMN created_by uuid REFERENCES herald.api_keys (id) ON DELETE CASCADE;

-- A revocation looks its key's credentials up by creator.
CREATE INDEX api_keys_created_by ON herald.api_keys (created_by) WHERE created_by IS NOT NULL;
CREATE INDEX portal_links_created_by ON herald.portal_links (created_by) WHERE created_by IS NOT NULL;
CREATE INDEX portal_sessions_created_by ON herald.portal_sessions (created_by) WHERE created_by IS NOT NULL;
