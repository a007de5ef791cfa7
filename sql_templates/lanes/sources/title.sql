-- Sources lane, title ranking: chunks of documents whose title the question contains as whole
-- words, then of documents whose name (the title without its parenthesised qualifier, 0062) it
-- contains: "the performers of Brother" names "Brother (Pearl Jam song)", but less surely than a
-- full title, for several pages may share the name. Question terms are runs of whole words in
-- lower case, so `title_lower = ANY(...)` and `title_name_lower = ANY(...)` read btree indexes, for
-- a confined caller too (0044); full titles first, the longest first, then nearest chunk first.
-- A title of stopwords only ("In") names nothing (0062).
-- How surely a named title is the page sought, `weight`:
--   * a name inside a longer named title ("Nile" in "The Jewel of the Nile") is part of that
--     name, not a name of its own: it is dropped;
--   * a title that many passages name ("Germany", "Year") is a common concept more than the
--     subject of a question naming it, as a word many passages hold says little in BM25: its
--     weight is :common_title_mentions over the passages naming it (title links), at most 1.
--     Passages are counted up to :bridge_fanout, the count from which the bridge calls a name a hub.
WITH named_document AS (
    SELECT document.id AS document_id, true AS full_title, length(document.title) AS title_length,
           document.title_lower AS name
    FROM document
    WHERE document.title_lower = ANY(:question_terms)
      AND document.title_name_is_distinctive
    UNION ALL
    SELECT document.id, false, length(document.title), document.title_name_lower
    FROM document
    WHERE document.title_name_lower = ANY(:question_terms)
      AND document.title_name_lower <> document.title_lower
      AND document.title_name_is_distinctive
),
own_name AS (
    SELECT named_document.document_id, named_document.full_title, named_document.title_length, named_document.name
    FROM named_document
    WHERE NOT EXISTS (
        SELECT 1
        FROM named_document AS longer
        WHERE longer.name <> named_document.name
          AND strpos(' ' || longer.name || ' ', ' ' || named_document.name || ' ') > 0  -- @constant: found at some position
    )
),
weighted_document AS (
    SELECT
        own_name.document_id,
        own_name.full_title,
        own_name.title_length,
        least(1.0, :common_title_mentions / greatest(naming.passages, 1)) AS weight
    FROM own_name
    CROSS JOIN LATERAL (
        SELECT count(*) AS passages
        FROM (
            SELECT DISTINCT title_link.chunk_id
            FROM title_link
            WHERE title_link.name = own_name.name
            ORDER BY title_link.chunk_id
            LIMIT :bridge_fanout
        ) AS naming_chunk
    ) AS naming
),
named_chunk AS (
    SELECT
        chunk.id AS chunk_id,
        weighted_document.full_title,
        weighted_document.title_length,
        weighted_document.weight,
        chunk.embedding <=> :query_vector AS distance
    FROM weighted_document
    JOIN chunk ON chunk.document_id = weighted_document.document_id
)
SELECT
    named_chunk.chunk_id,
    named_chunk.full_title,
    named_chunk.weight,
    row_number() OVER (
        ORDER BY named_chunk.full_title DESC, named_chunk.title_length DESC, named_chunk.distance, named_chunk.chunk_id
    ) AS rank
FROM named_chunk
ORDER BY rank
LIMIT :fusion_depth
