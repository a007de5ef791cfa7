-- Working memory: session items not yet promoted to documents (a promoted item is found as a
-- source instead), nearest the question first. The HNSW window over session_item is taken before
-- the promotion guard, so promoted items cannot empty it by filtering after a short index scan; its
-- depth is a constant (README.md, "Dense rankings"), cut to :fusion_depth.
WITH candidate AS MATERIALIZED (
    SELECT session_item.id, session_item.embedding <=> :query_vector AS distance
    FROM session_item
    ORDER BY session_item.embedding <=> :query_vector
    LIMIT 100  -- @constant: the ANN window, deeper than any setting cuts it to
),
nearest AS (
    SELECT candidate.id, candidate.distance
    FROM candidate
    ORDER BY candidate.distance, candidate.id
    LIMIT :fusion_depth
)
SELECT
    'session:' || session_item.id AS evidence_id,
    nearest.distance AS ordering,
    'Noted ' || to_char(session_item.created_at, 'YYYY-MM-DD') || ': ' || session_item.text AS line,
    session_item.scopes,
    NULL AS fact_id,
    NULL AS source_chunk_id,
    NULL AS source_title,
    NULL AS source_uri,
    NULL AS document_id,
    NULL AS document_created_at,
    false AS direct,
    NULL AS stance
FROM nearest
JOIN session_item ON session_item.id = nearest.id
WHERE session_item.promoted_at IS NULL
  AND nearest.distance <= :find_max_distance
ORDER BY nearest.distance, session_item.id
LIMIT :lane_limit
