-- Sources lane, dense ranking: the chunks nearest the question. The HNSW window runs over chunk
-- alone and is MATERIALIZED; documents join after it, and the floor drops what is too far.
WITH nearest AS MATERIALIZED (
    SELECT chunk.id, chunk.embedding <=> :query_vector AS distance
    FROM chunk
    ORDER BY chunk.embedding <=> :query_vector
    LIMIT :fusion_depth
)
SELECT
    nearest.id AS chunk_id,
    row_number() OVER (ORDER BY nearest.distance, nearest.id) AS rank
FROM nearest
WHERE nearest.distance <= :find_max_distance
