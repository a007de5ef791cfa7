-- Sources lane, first fusion: reciprocal rank fusion, sum of 1 / (rrf_k + rank), of the dense,
-- BM25 and title rankings. A chunk of a document the question names gets a fixed bonus and
-- direct = true.
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
)
SELECT
    ranking.chunk_id,
    sum(1.0 / (:rrf_k + ranking.rank))
        + CASE WHEN bool_or(ranking.named) THEN :named_title_bonus ELSE 0 END AS score,
    bool_or(ranking.named) AS direct
FROM ranking
GROUP BY ranking.chunk_id
