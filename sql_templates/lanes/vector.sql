-- Vector lanes: working memory, entity profiles and communities, the rows of the lane's kind nearest
-- the question within the distance floor. `vector_item` stands for the kind's table, and its
-- `item_id`, `evidence_id` and `line` for that table's key, evidence id and rendered line
-- (pipelines/read/vector_lane.py names them per kind). The floor is applied after the HNSW window
-- (README.md, "Dense rankings"): inside it, an iterative index scan would keep walking the graph for
-- rows the floor then drops. A kind with a guard (working memory: items not yet promoted to
-- documents, which are found as sources instead) cuts the window to :fusion_depth, then applies the
-- guard and the floor before the lane's limit, so guarded rows cannot empty the lane.
WITH candidate AS MATERIALIZED (
    SELECT vector_item.item_id, vector_item.embedding <=> :query_vector AS distance
    FROM vector_item
    ORDER BY vector_item.embedding <=> :query_vector
    LIMIT 100  -- @constant: the ANN window, deeper than any setting cuts it to
),
nearest AS (
    SELECT candidate.item_id, candidate.distance
    FROM candidate
    WHERE candidate.distance <= :find_max_distance
    ORDER BY candidate.distance, candidate.item_id
    LIMIT :lane_limit
)
SELECT
    vector_item.evidence_id AS evidence_id,
    nearest.distance AS ordering,
    vector_item.line AS line,
    vector_item.scopes,
    NULL AS fact_id,
    NULL AS source_chunk_id,
    NULL AS source_title,
    NULL AS source_uri,
    NULL AS document_id,
    NULL AS document_created_at,
    false AS direct,
    NULL AS stance
FROM nearest
JOIN vector_item ON vector_item.item_id = nearest.item_id
