-- Sources lane, title ranking: chunks of documents whose title the question contains as whole
-- words. Question terms are runs of whole words in lower case, so `title_lower = ANY(...)` reads
-- document_title_lower_column_idx, for a confined caller too (0044); the longest named title ranks
-- first, then nearest chunk first.
WITH named_chunk AS (
    SELECT
        chunk.id AS chunk_id,
        length(document.title) AS title_length,
        chunk.embedding <=> :query_vector AS distance
    FROM document
    JOIN chunk ON chunk.document_id = document.id
    WHERE document.title_lower = ANY(:question_terms)
)
SELECT
    named_chunk.chunk_id,
    row_number() OVER (
        ORDER BY named_chunk.title_length DESC, named_chunk.distance, named_chunk.chunk_id
    ) AS rank
FROM named_chunk
ORDER BY rank
LIMIT :fusion_depth
