-- entity_state: the current state of the named entities, one row per entity that exists.
-- A state is every live fact the entity takes part in, as subject or as object; the two sides are
-- UNIONed so each reaches its own index (an OR would scan every fact).
WITH involved AS (
    SELECT f.subject_id AS entity_id, f.id AS fact_id, f.predicate, f.statement
    FROM live_fact AS f
    WHERE f.subject_id = ANY(CAST(:entity_ids AS text[]))
    UNION
    SELECT f.object_id AS entity_id, f.id AS fact_id, f.predicate, f.statement
    FROM live_fact AS f
    WHERE f.object_id = ANY(CAST(:entity_ids AS text[]))
)
SELECT
    e.id AS entity_id,
    e.name AS entity_name,
    e.kind AS entity_kind,
    count(involved.fact_id) AS fact_count,
    coalesce(
        string_agg(involved.statement, '; ' ORDER BY involved.predicate, involved.statement, involved.fact_id),
        ''
    ) AS statements
FROM entity AS e
LEFT JOIN involved ON involved.entity_id = e.id
WHERE e.id = ANY(CAST(:entity_ids AS text[]))
GROUP BY e.id, e.name, e.kind
ORDER BY e.id
LIMIT CAST(:entity_state_limit AS bigint)
