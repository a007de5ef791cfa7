-- Sources lane, dense ranking: the chunks nearest the question, with their distance (which the
-- fusion scales) and rank. The HNSW window runs over chunk alone and is MATERIALIZED, with a
-- constant depth the generic plan can cost (see README.md, "Dense rankings"); the :fusion_depth
-- cut, the floor and documents come after it.
WITH candidate AS MATERIALIZED (
    SELECT chunk.id, chunk.embedding <=> :query_vector AS distance
    FROM chunk
    ORDER BY chunk.embedding <=> :query_vector
    LIMIT 100  -- @constant: the ANN window, deeper than any setting cuts it to
),
nearest AS (
    SELECT candidate.id, candidate.distance
    FROM candidate
    ORDER BY candidate.distance, candidate.id
    LIMIT :fusion_depth
)
SELECT
    nearest.id AS chunk_id,
    nearest.distance,
    row_number() OVER (ORDER BY nearest.distance, nearest.id) AS rank
FROM nearest
WHERE nearest.distance <= :find_max_distance
