-- entity_alias (0044) is kept by a trigger that deleted and re-inserted an entity's alias rows on
-- every insert and every update naming aliases or scopes. Most inserted entities are new names with
-- no alias, and an insert has no alias rows to delete (they cascade away with their entity), so
-- that was two statements per created entity for nothing, under the extraction merge's graph write
-- lock. The trigger now fires only when there is something to write: an insert with aliases, or an
-- update that changes the aliases or the scopes. The rows it keeps are the same.

DROP TRIGGER IF EXISTS entity_alias_sync ON entity;

CREATE OR REPLACE TRIGGER entity_alias_insert
    AFTER INSERT ON entity
    FOR EACH ROW WHEN (cardinality(NEW.aliases) > 0) EXECUTE FUNCTION lanegraph_sync_entity_alias();
CREATE OR REPLACE TRIGGER entity_alias_update
    AFTER UPDATE OF aliases, scopes ON entity
    FOR EACH ROW WHEN (OLD.aliases IS DISTINCT FROM NEW.aliases OR OLD.scopes IS DISTINCT FROM NEW.scopes)
    EXECUTE FUNCTION lanegraph_sync_entity_alias();
-- The bench loader COPYs with session_replication_role = replica, which skips ordinary triggers.
ALTER TABLE entity ENABLE ALWAYS TRIGGER entity_alias_insert;
ALTER TABLE entity ENABLE ALWAYS TRIGGER entity_alias_update;
