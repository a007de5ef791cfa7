-- Sources lane, title ranking: chunks of documents whose title the question contains as whole
-- words, then of documents whose name (the title without its parenthesised qualifier, 0062) it
-- contains: "the performers of Brother" names "Brother (Pearl Jam song)", but less surely than a
-- full title, for several pages may share the name. Question terms are runs of whole words in
-- lower case, so `title_lower = ANY(...)` and `title_name_lower = ANY(...)` read btree indexes, for
-- a confined caller too (0044); full titles first, the longest first, then nearest chunk first.
-- A title of stopwords only ("In") names nothing (0062).
WITH named_chunk AS (
    SELECT
        chunk.id AS chunk_id,
        true AS full_title,
        length(document.title) AS title_length,
        chunk.embedding <=> :query_vector AS distance
    FROM document
    JOIN chunk ON chunk.document_id = document.id
    WHERE document.title_lower = ANY(:question_terms)
      AND document.title_name_is_distinctive
    UNION ALL
    SELECT chunk.id, false, length(document.title), chunk.embedding <=> :query_vector
    FROM document
    JOIN chunk ON chunk.document_id = document.id
    WHERE document.title_name_lower = ANY(:question_terms)
      AND document.title_name_lower <> document.title_lower
      AND document.title_name_is_distinctive
)
SELECT
    named_chunk.chunk_id,
    named_chunk.full_title,
    row_number() OVER (
        ORDER BY named_chunk.full_title DESC, named_chunk.title_length DESC, named_chunk.distance, named_chunk.chunk_id
    ) AS rank
FROM named_chunk
ORDER BY rank
LIMIT :fusion_depth
