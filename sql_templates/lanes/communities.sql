-- Communities: the label and summary of the communities nearest the question, within the floor,
-- which is applied after the HNSW window (see profile.sql).
WITH candidate AS MATERIALIZED (
    SELECT community.id, community.embedding <=> :query_vector AS distance
    FROM community
    ORDER BY community.embedding <=> :query_vector
    LIMIT 100  -- @constant: the ANN window, deeper than any setting cuts it to
),
nearest AS (
    SELECT candidate.id, candidate.distance
    FROM candidate
    WHERE candidate.distance <= :find_max_distance
    ORDER BY candidate.distance, candidate.id
    LIMIT :lane_limit
)
SELECT
    'community:' || community.id AS evidence_id,
    nearest.distance AS ordering,
    community.label || ': ' || community.summary AS line,
    community.scopes,
    NULL AS fact_id,
    NULL AS source_chunk_id,
    NULL AS source_title,
    NULL AS source_uri,
    NULL AS document_id,
    NULL AS document_created_at,
    false AS direct,
    NULL AS stance
FROM nearest
JOIN community ON community.id = nearest.id
