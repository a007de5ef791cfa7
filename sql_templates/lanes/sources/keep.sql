-- Sources lane rows, from the fused scores (`scored`: the first fusion, or the bridge hop's when
-- the plan has it). Retracted and expired documents drop out, each document keeps at most
-- :find_per_document chunks, and the lane keeps the best :lane_limit. The line is the document
-- title, its dates when known, then the chunk text with whitespace flattened.
WITH capped AS (
    SELECT
        scored.chunk_id,
        scored.score,
        scored.direct,
        chunk.document_id,
        chunk.text,
        chunk.scopes,
        row_number() OVER (
            PARTITION BY chunk.document_id ORDER BY scored.score DESC, scored.chunk_id
        ) AS document_rank
    FROM scored
    JOIN chunk ON chunk.id = scored.chunk_id
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
