-- Entity resolution finds a recorded alias through entity_alias, and the GIN index on
-- entity.aliases goes. That index served only this probe, and every entity the extraction merge
-- creates entered it under the graph write lock (an empty array is a GIN entry too), as did every
-- alias update. entity_alias (migration 0044) holds one row per alias of each entity, kept by
-- triggers that fire on every insert with aliases and every change of aliases or scopes (0112), and
-- its primary key (alias, entity_id) answers the probe by btree. The probe finds the same entities:
-- an alias row exists exactly when the entity's aliases hold the name.
--
-- lanegraph_resolve_entity_name as in migration 0114 but for the alias probe.
CREATE OR REPLACE FUNCTION lanegraph_resolve_entity_name(wanted text, wanted_kind text, wanted_scopes text[])
RETURNS TABLE (entity_id text, via_alias boolean)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(same.id, renamed.id, aliased.id, project.id, fuzzy.id),
           coalesce(same.id, renamed.id) IS NULL AND coalesce(aliased.id, project.id, fuzzy.id) IS NOT NULL
    FROM (SELECT wanted AS normalized, wanted_kind AS kind, wanted_scopes AS scopes) s
    LEFT JOIN LATERAL (
        SELECT e.id FROM entity e WHERE e.normalized_name = s.normalized AND e.scopes = s.scopes
        ORDER BY e.degree DESC, e.created_at, e.id LIMIT 1
    ) renamed ON true
    LEFT JOIN LATERAL (
        SELECT e.id FROM entity e
        WHERE renamed.id IS NOT NULL
          AND e.kind = s.kind AND e.normalized_name = s.normalized AND e.scopes = s.scopes
    ) same ON true
    LEFT JOIN LATERAL (
        SELECT e.id FROM entity_alias a JOIN entity e ON e.id = a.entity_id
        WHERE renamed.id IS NULL AND a.alias = s.normalized AND e.scopes = s.scopes
        ORDER BY e.degree DESC, e.id LIMIT 1
    ) aliased ON true
    LEFT JOIN LATERAL (
        SELECT e.id FROM entity e
        WHERE renamed.id IS NULL AND aliased.id IS NULL
          AND s.kind <> 'project' AND e.kind = 'project' AND e.normalized_name = 'project ' || s.normalized
          AND e.scopes = s.scopes
    ) project ON true
    LEFT JOIN LATERAL (
        SELECT near.id FROM (
            SELECT e.id, e.name, e.kind, e.scopes FROM entity e
            WHERE coalesce(same.id, renamed.id, aliased.id, project.id) IS NULL AND s.kind <> 'code'
              AND lower(e.name) % s.normalized
            OFFSET 0
        ) near
        WHERE near.kind = s.kind AND near.scopes = s.scopes
        ORDER BY similarity(lower(near.name), s.normalized) DESC, near.id LIMIT 1
    ) fuzzy ON true
$$;

DROP INDEX IF EXISTS entity_aliases_idx;
