-- Sources lane rows, from the fused scores (`scored`: the first fusion, or the bridge hop's when
-- the plan has it). Retracted and expired documents drop out, and documents still being ingested
-- (a chunk awaiting its embedding); each document keeps at most
-- :find_per_document chunks, and the lane keeps the best :lane_limit. The line is the document
-- title, its dates when known, then the chunk text with whitespace flattened.
-- A chunk of a page already in the lane (same title: another chunk, or another document of that
-- page) yields one place to the next page: the second hop of a multi-hop question is another
-- page, and two passages of the first hop's page crowded it out of the top two (MuSiQue train
-- R@2 +2.3 with this rule; sets of distinct titles are unchanged). A conversation's turn is a
-- page of its own: the turns of a session share its title, and the rule pushed the session's
-- second turn below every other session's (LoCoMo dev R@2 0.396 with it, 0.466 without).
WITH capped AS (
    SELECT
        scored.chunk_id,
        scored.score,
        scored.direct,
        chunk.document_id,
        chunk.text,
        chunk.scopes,
        document.title,
        CASE WHEN document.speaker IS NULL THEN document.title ELSE document.id END AS page,
        row_number() OVER (
            PARTITION BY chunk.document_id ORDER BY scored.score DESC, scored.chunk_id
        ) AS document_rank
    FROM scored
    JOIN chunk ON chunk.id = scored.chunk_id
    JOIN document ON document.id = chunk.document_id
    WHERE document.retracted_at IS NULL
      AND (document.expires_at IS NULL OR document.expires_at > now())
      -- Published: no chunk of the document awaits its embedding (0091), so a document being
      -- ingested is in no lane until it is in all of them. The documents being ingested are read
      -- once, from 0091's partial index (empty between ingests): probed per row instead, a
      -- confined caller's generic plan read every chunk on a small corpus.
      AND NOT chunk.document_id = ANY(ARRAY(
          SELECT unembedded.document_id FROM chunk AS unembedded WHERE unembedded.embedding IS NULL
      ))
),
kept AS (
    SELECT capped.chunk_id, capped.score, capped.direct, capped.document_id, capped.text, capped.scopes, capped.title, capped.page
    FROM capped
    WHERE capped.document_rank <= :find_per_document
    ORDER BY capped.score DESC, capped.chunk_id
    LIMIT :lane_limit
),
ranked AS (
    SELECT
        kept.chunk_id,
        row_number() OVER (ORDER BY kept.score DESC, kept.chunk_id) AS position,
        row_number() OVER (
            PARTITION BY kept.page ORDER BY kept.score DESC, kept.chunk_id
        ) > 1 AS repeated  -- @constant: every chunk of a page after its first
    FROM kept
),
slotted AS (
    -- Every chunk takes the slot of the first chunk of a page at or after it: a page's first
    -- chunk its own, a repeated page's chunk the next page's, which it then follows; one with no
    -- such chunk after it keeps its own.
    SELECT
        ranked.chunk_id,
        ranked.position,
        ranked.repeated,
        coalesce(
            min(CASE WHEN NOT ranked.repeated THEN ranked.position END) OVER (
                ORDER BY ranked.position ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING
            ),
            ranked.position
        ) AS slot
    FROM ranked
),
placed AS (
    SELECT
        slotted.chunk_id,
        row_number() OVER (ORDER BY slotted.slot, slotted.repeated, slotted.position) AS place
    FROM slotted
)
SELECT
    'chunk:' || kept.chunk_id AS evidence_id,
    placed.place AS ordering,
    document.title
        || coalesce(' (observed ' || to_char(document.observed_at, 'YYYY-MM-DD') || ')', '')
        || coalesce(' (expires ' || to_char(document.expires_at, 'YYYY-MM-DD') || ')', '')
        || ': '
        || left(
            -- Most chunks are flat already (no run of whitespace, no whitespace but the space): a
            -- match costs a fraction of a replacement, which took 4 to 10% of find on the
            -- evaluation sets.
            CASE
                WHEN kept.text ~ '\s\s|(?! )\s' THEN regexp_replace(kept.text, '\s+', ' ', 'g')
                ELSE kept.text
            END,
            CAST(:snippet_chars AS integer)
        ) AS line,
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
JOIN placed ON placed.chunk_id = kept.chunk_id
JOIN document ON document.id = kept.document_id
