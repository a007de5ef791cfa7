-- Overview: RAPTOR summaries at the deepest level, the roots of the tree, nearest the question
-- first. The roots are read through raptor_node_level_idx rather than HNSW: they are a handful
-- among many nodes, and an HNSW scan filtered down to them would come back short.
WITH root AS MATERIALIZED (
    SELECT raptor_node.id, raptor_node.summary, raptor_node.scopes, raptor_node.embedding
    FROM raptor_node
    WHERE raptor_node.level = (SELECT max(deepest.level) FROM raptor_node AS deepest)
)
SELECT
    'raptor:' || root.id AS evidence_id,
    root.embedding <=> :query_vector AS ordering,
    root.summary AS line,
    root.scopes,
    NULL AS fact_id,
    NULL AS source_chunk_id,
    NULL AS source_title,
    NULL AS source_uri,
    NULL AS document_id,
    NULL AS document_created_at,
    false AS direct,
    NULL AS stance
FROM root
WHERE root.embedding <=> :query_vector <= :find_max_distance
ORDER BY root.embedding <=> :query_vector, root.id
LIMIT :lane_limit
