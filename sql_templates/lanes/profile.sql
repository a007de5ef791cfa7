-- Entity profiles: the summaries nearest the question, within the distance floor. The floor is
-- applied after the HNSW window (README.md, "Dense rankings"): inside it, an iterative index scan
-- would keep walking the graph for rows the floor then drops.
WITH candidate AS MATERIALIZED (
    SELECT profile.entity_id, profile.embedding <=> :query_vector AS distance
    FROM profile
    ORDER BY profile.embedding <=> :query_vector
    LIMIT 100  -- @constant: the ANN window, deeper than any setting cuts it to
),
nearest AS (
    SELECT candidate.entity_id, candidate.distance
    FROM candidate
    WHERE candidate.distance <= :find_max_distance
    ORDER BY candidate.distance, candidate.entity_id
    LIMIT :lane_limit
)
SELECT
    'profile:' || profile.entity_id AS evidence_id,
    nearest.distance AS ordering,
    entity.name || ': ' || profile.summary AS line,
    profile.scopes,
    NULL AS fact_id,
    NULL AS source_chunk_id,
    NULL AS source_title,
    NULL AS source_uri,
    NULL AS document_id,
    NULL AS document_created_at,
    false AS direct,
    NULL AS stance
FROM nearest
JOIN profile ON profile.entity_id = nearest.entity_id
JOIN entity ON entity.id = profile.entity_id
