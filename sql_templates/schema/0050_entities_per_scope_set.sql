-- Entities per scope set, so every tenant gets a graph of its own documents.
--
-- An entity used to be one row per (kind, name) whose scopes were the union of its mentions':
-- a name two tenants both use became a row neither may read (row security asks for every scope of
-- a row), and with it the facts' subjects, the profiles and the communities built on it. Now an
-- entity is one row per (kind, name, scope set): a document's mentions resolve among entities of
-- exactly its scope set, so each entity, and everything derived from it, is readable by precisely
-- the callers who may read the documents behind it. Unscoped corpora have one scope set, '{}',
-- and keep the rows (and ids) they had.
--
-- Rows already stored keep their scopes; re-extracting their documents rebuilds them per scope set.
ALTER TABLE entity DROP CONSTRAINT IF EXISTS entity_kind_normalized_name_key;
CREATE UNIQUE INDEX IF NOT EXISTS entity_kind_normalized_name_scopes_key ON entity (kind, normalized_name, scopes);
