-- Exact-name lookups a confined caller can drive from an index (without it, confined find ran
-- 14-17x the owner's time).
--
-- Under row security PostgreSQL evaluates the read policy before every qual that is not LEAKPROOF,
-- and only leakproof quals may become index conditions. `lower(name) = ANY(...)` calls lower(), and
-- `aliases && ...` is an array operator: neither is leakproof, so for lanegraph_reader the facts
-- lane's named entities and the sources lane's title ranking seq-scanned entity and document with
-- the policy as filter. Text `=` is leakproof, so the lower-case names are stored as columns (filled
-- by PostgreSQL, so no writer changes) and looked up by btree, and every alias gets a row of its own
-- in entity_alias, kept by a trigger and carrying its entity's scopes so it is visible exactly when
-- the entity is.
--
-- The expression indexes on lower(name) and lower(title) would index the same values twice.

ALTER TABLE entity ADD COLUMN IF NOT EXISTS name_lower text GENERATED ALWAYS AS (lower(name)) STORED;
CREATE INDEX IF NOT EXISTS entity_name_lower_column_idx ON entity (name_lower);
DROP INDEX IF EXISTS entity_name_lower_idx;

ALTER TABLE document ADD COLUMN IF NOT EXISTS title_lower text GENERATED ALWAYS AS (lower(title)) STORED;
CREATE INDEX IF NOT EXISTS document_title_lower_column_idx ON document (title_lower);
DROP INDEX IF EXISTS document_title_lower_idx;

CREATE TABLE IF NOT EXISTS entity_alias (
    alias      text NOT NULL,
    entity_id  text NOT NULL REFERENCES entity (id) ON DELETE CASCADE,
    scopes     text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (alias, entity_id)
);
CREATE INDEX IF NOT EXISTS entity_alias_entity_idx ON entity_alias (entity_id);

-- Runs with the writer's rights, so row security checks the alias rows as it checked the entity.
CREATE OR REPLACE FUNCTION lanegraph_sync_entity_alias() RETURNS trigger
    LANGUAGE plpgsql
AS $sync$
BEGIN
    DELETE FROM entity_alias WHERE entity_id = NEW.id;
    INSERT INTO entity_alias (alias, entity_id, scopes)
    SELECT DISTINCT alias, NEW.id, NEW.scopes FROM unnest(NEW.aliases) AS alias;
    RETURN NULL;
END
$sync$;

CREATE OR REPLACE TRIGGER entity_alias_sync
    AFTER INSERT OR UPDATE OF aliases, scopes ON entity
    FOR EACH ROW EXECUTE FUNCTION lanegraph_sync_entity_alias();
-- The bench loader COPYs with session_replication_role = replica, which skips ordinary triggers.
ALTER TABLE entity ENABLE ALWAYS TRIGGER entity_alias_sync;

INSERT INTO entity_alias (alias, entity_id, scopes)
SELECT DISTINCT alias, entity.id, entity.scopes
FROM entity, unnest(entity.aliases) AS alias
ON CONFLICT (alias, entity_id) DO UPDATE SET scopes = excluded.scopes;

-- 0040 ran before this table existed: put it under row security too.
SELECT lanegraph_apply_row_security();
ANALYZE entity, document, entity_alias;
