-- Sources lane, first fusion: relative score fusion of the dense and BM25 rankings. Each ranking's
-- scores are scaled to 0..1 over its own window (dense: similarity min-max scaled; BM25: score over
-- the best score), weighted by :dense_weight and :lexical_weight and summed; a chunk of a document
-- whose title the question names gets :named_title_bonus and direct = true; one whose title it
-- names without the parenthesised qualifier ("Brother" for "Brother (Pearl Jam song)") gets
-- :unqualified_title_bonus, less, for several pages may share that name; either bonus is scaled by
-- how surely the title is the page sought (the title ranking's weight).
-- Scores rather than reciprocal ranks, because ranks forget the margin: a chunk BM25 puts first by
-- far (the one record holding a code the question names) lost to chunks both rankings put midway.
WITH semantic AS (
    SELECT
        dense.chunk_id,
        coalesce(
            (max(dense.distance) OVER () - dense.distance)
                / nullif(max(dense.distance) OVER () - min(dense.distance) OVER (), 0),
            1
        ) AS relevance
    FROM dense
),
lexical AS (
    SELECT bm25.chunk_id, coalesce(bm25.score / nullif(max(bm25.score) OVER (), 0), 1) AS relevance
    FROM bm25
),
weighted AS (
    SELECT semantic.chunk_id, :dense_weight * semantic.relevance AS score, false AS named FROM semantic
    UNION ALL
    SELECT lexical.chunk_id, :lexical_weight * lexical.relevance, false FROM lexical
    UNION ALL
    SELECT
        title.chunk_id,
        title.weight * CASE WHEN title.full_title THEN :named_title_bonus ELSE :unqualified_title_bonus END,
        title.full_title
    FROM title
)
SELECT weighted.chunk_id, sum(weighted.score) AS score, bool_or(weighted.named) AS direct
FROM weighted
GROUP BY weighted.chunk_id
