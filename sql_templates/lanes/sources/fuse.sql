-- Sources lane rows: reciprocal rank fusion, sum of 1 / (rrf_k + rank), of the dense, BM25 and
-- title rankings. A chunk of a document the question names gets a fixed bonus and direct = true.
-- Retracted and expired documents drop out, each document keeps at most :find_per_document chunks,
-- and the lane keeps the best :lane_limit. The line is the document title, its dates when known,
-- then the chunk text with whitespace flattened.
WITH lexical AS (
    SELECT bm25.chunk_id, row_number() OVER (ORDER BY bm25.score DESC, bm25.chunk_id) AS rank
    FROM bm25
),
ranking AS (
    SELECT dense.chunk_id, dense.rank, false AS named FROM dense
    UNION ALL
    SELECT lexical.chunk_id, lexical.rank, false FROM lexical
    UNION ALL
    SELECT title.chunk_id, title.rank, true FROM title
),
fused AS (
    SELECT
        ranking.chunk_id,
        sum(1.0 / (:rrf_k + ranking.rank))
            + CASE WHEN bool_or(ranking.named) THEN :named_title_bonus ELSE 0 END AS score,
        bool_or(ranking.named) AS direct
    FROM ranking
    GROUP BY ranking.chunk_id
),
capped AS (
    SELECT
        fused.chunk_id,
        fused.score,
        fused.direct,
        chunk.document_id,
        chunk.text,
        chunk.scopes,
        row_number() OVER (
            PARTITION BY chunk.document_id ORDER BY fused.score DESC, fused.chunk_id
        ) AS document_rank
    FROM fused
    JOIN chunk ON chunk.id = fused.chunk_id
    JOIN document ON document.id = chunk.document_id
    WHERE document.retracted_at IS NULL
      AND (document.expires_at IS NULL OR document.expires_at > now())
),
kept AS (
    SELECT capped.chunk_id, capped.score, capped.direct, capped.document_id, capped.text, capped.scopes
    FROM capped
    WHERE capped.document_rank <= :find_per_document
    ORDER BY capped.score DESC, capped.chunk_id
    LIMIT :lane_limit
)
SELECT
    'chunk:' || kept.chunk_id AS evidence_id,
    -kept.score AS ordering,
    document.title
        || coalesce(' (observed ' || to_char(document.observed_at, 'YYYY-MM-DD') || ')', '')
        || coalesce(' (expires ' || to_char(document.expires_at, 'YYYY-MM-DD') || ')', '')
        || ': '
        || left(regexp_replace(kept.text, '\s+', ' ', 'g'), CAST(:snippet_chars AS integer)) AS line,
    kept.scopes,
    NULL AS fact_id,
    kept.chunk_id AS source_chunk_id,
    document.title AS source_title,
    document.uri AS source_uri,
    document.id AS document_id,
    document.created_at AS document_created_at,
    kept.direct,
    NULL AS stance
FROM kept
JOIN document ON document.id = kept.document_id
