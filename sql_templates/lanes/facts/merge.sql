-- Facts lane rows: the parts interleaved by rank. Each part ranked its facts on its own; a fact
-- keeps its best rank across parts, so a fact one part ranked first stays first however another
-- ranked it (ranks, not raw distances, so cosine similarity cannot drown graph-only evidence).
-- One row per distinct statement per perspective, of published documents, cut at the lane limit,
-- then hydrated with the source chunk and its document.
WITH best_rank AS (
    SELECT ranked_part.fact_id, min(ranked_part.part_rank) AS part_rank
    FROM ranked_part
    GROUP BY ranked_part.fact_id
),
distinct_statement AS (
    SELECT
        live_fact.id,
        live_fact.statement,
        live_fact.perspective,
        live_fact.valid_from,
        live_fact.source_chunk_id,
        live_fact.document_id,
        live_fact.scopes,
        best_rank.part_rank,
        row_number() OVER (
            PARTITION BY live_fact.perspective, lower(live_fact.statement)
            ORDER BY best_rank.part_rank, live_fact.id
        ) AS copy
    FROM best_rank
    JOIN live_fact ON live_fact.id = best_rank.fact_id
    -- A fact of a document being ingested (a chunk awaiting its embedding, 0091) waits with the
    -- document, which the sources lane hides as long (sources/keep.sql): every lane finds a document's
    -- evidence at once, or none does. The documents being ingested are read once, from 0091's
    -- partial index, empty between ingests.
    WHERE live_fact.document_id IS NULL
       OR NOT live_fact.document_id = ANY(ARRAY(
           SELECT unembedded.document_id FROM chunk AS unembedded WHERE unembedded.embedding IS NULL
       ))
),
kept AS (
    SELECT
        distinct_statement.id,
        distinct_statement.statement,
        distinct_statement.perspective,
        distinct_statement.valid_from,
        distinct_statement.source_chunk_id,
        distinct_statement.document_id,
        distinct_statement.scopes,
        distinct_statement.part_rank
    FROM distinct_statement
    WHERE distinct_statement.copy = 1  -- @constant: the best-ranked copy of a statement
    ORDER BY distinct_statement.part_rank, distinct_statement.id
    LIMIT :lane_limit
)
SELECT
    'fact:' || kept.id AS evidence_id,
    kept.part_rank AS ordering,
    kept.statement || coalesce(' (since ' || to_char(kept.valid_from, 'YYYY-MM-DD') || ')', '') AS line,
    kept.scopes,
    kept.id AS fact_id,
    kept.source_chunk_id,
    document.title AS source_title,
    document.uri AS source_uri,
    document.id AS document_id,
    document.created_at AS document_created_at,
    false AS direct,
    CASE
        WHEN kept.perspective = '' THEN 'settled'  -- @constant: the empty perspective is the shared view
        ELSE 'attributed'
    END AS stance
FROM kept
LEFT JOIN chunk ON chunk.id = kept.source_chunk_id
LEFT JOIN document ON document.id = coalesce(kept.document_id, chunk.document_id)
