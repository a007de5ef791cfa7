-- Entity catalog: what exists right now, derived from the database rather than from an extractor.
-- The ontology kinds nearest the question (up to the lane limit); each kind's first
-- :catalog_entities_per_kind live entities by name (an endpoint of a live fact) with their state
-- facts (a literal value instead of an object entity) in parentheses; one line per (kind, scopes):
-- "Current project entities are Atlas (active), Beacon (waiting)." The kinds' HNSW window has a
-- constant depth (README.md, "Dense rankings"), cut to the lane limit.
WITH candidate_kind AS MATERIALIZED (
    SELECT entity_kind.name, entity_kind.embedding <=> :query_vector AS distance
    FROM entity_kind
    ORDER BY entity_kind.embedding <=> :query_vector
    LIMIT 100  -- @constant: the ANN window, deeper than any setting cuts it to
),
nearest_kind AS (
    SELECT candidate_kind.name, candidate_kind.distance
    FROM candidate_kind
    ORDER BY candidate_kind.distance, candidate_kind.name
    LIMIT :lane_limit
),
live_entity AS (
    SELECT listed.id, listed.name, nearest_kind.name AS kind, listed.scopes, nearest_kind.distance
    FROM nearest_kind
    CROSS JOIN LATERAL (
        -- At most a line's worth of entities per kind, in name order through the (kind,
        -- normalized_name) index, so a kind with many entities costs no more than one with few.
        SELECT entity.id, entity.name, entity.scopes
        FROM entity
        WHERE entity.kind = nearest_kind.name
          AND (
              EXISTS (SELECT 1 FROM live_fact WHERE live_fact.subject_id = entity.id)
              OR EXISTS (SELECT 1 FROM live_fact WHERE live_fact.object_id = entity.id)
          )
        ORDER BY entity.normalized_name
        LIMIT :catalog_entities_per_kind
    ) AS listed
),
described AS (
    SELECT
        live_entity.kind,
        live_entity.scopes,
        live_entity.distance,
        live_entity.name,
        live_entity.name || coalesce(' (' || (
            SELECT string_agg(DISTINCT live_fact.object_value, ', ')
            FROM live_fact
            WHERE live_fact.subject_id = live_entity.id AND live_fact.object_value IS NOT NULL
        ) || ')', '') AS label
    FROM live_entity
)
SELECT
    'kind:' || described.kind || ':' || array_to_string(described.scopes, ',') AS evidence_id,
    min(described.distance) AS ordering,
    'Current ' || described.kind || ' entities are '
        || string_agg(described.label, ', ' ORDER BY described.name) || '.' AS line,
    described.scopes,
    NULL AS fact_id,
    NULL AS source_chunk_id,
    NULL AS source_title,
    NULL AS source_uri,
    NULL AS document_id,
    NULL AS document_created_at,
    false AS direct,
    NULL AS stance
FROM described
GROUP BY described.kind, described.scopes
ORDER BY min(described.distance), described.kind
LIMIT :lane_limit
