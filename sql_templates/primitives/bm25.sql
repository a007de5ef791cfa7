-- bm25: chunks ranked by Okapi BM25 for :query_text, best first.
--
-- Terms are PostgreSQL's English lexemes (stemmed, stopwords dropped), the same to_tsvector the
-- bm25_index asset wrote the postings with; a term's frequency in a chunk is its number of positions
-- and a chunk's length is the sum of its frequencies. Only the postings of the question's own
-- lexemes are read, through the primary key of bm25_posting (term, chunk_id), which carries each
-- posting's frequency, its chunk's length and its scopes: a term's postings are one index-only range
-- scan, with no heap page and no length lookup per posting (0060).
--   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))          (Lucene's variant: never negative)
--   score(c, q) = sum over t in q of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))
-- N, avglen and df are sums over the rows of bm25_corpus and bm25_term the caller may read: the
-- write side keeps them per scope set of the chunks they count, so under row security they are the
-- statistics of exactly the caller's visible chunks, and unconfined they are global. The idf is
-- computed once per query term (MATERIALIZED), not once per posting, and each term's postings are
-- read by a LATERAL probe of the primary key: as a plain join, a generic plan on a small or freshly
-- loaded table reads the postings from the chunk side instead.
--
-- Exact pruning (MaxScore): most of a question's postings belong to its commonest terms, which add
-- the least to any score. A term adds at most its impact bound, its weight at its largest term
-- frequency and shortest chunk (0063). The terms of least bound whose bounds together stay below
-- the largest single bound are the lesser terms. The k best scores over the other terms alone give
-- a threshold the k-th best full score reaches; a chunk holding only lesser terms scores at most
-- their bounds' sum, and a chunk whose partial score plus that sum falls below the threshold cannot
-- be in the top k either. When that proof holds, only the chunks left (the survivors) are completed
-- with their lesser terms' weights; when it does not (fewer than k chunks hold a greater term, or
-- the lesser bounds are too large), every posting is scored. Either way the result is exactly the
-- full ranking's. The bounds' sum is widened by a relative 1e-9 so that rounding in the sums of
-- floating-point weights cannot make a bound fall short.
WITH corpus AS MATERIALIZED (
    SELECT
        CAST(sum(bm25_corpus.chunk_count) AS double precision) AS chunk_count,
        CAST(sum(bm25_corpus.total_length) AS double precision)
            / CAST(sum(bm25_corpus.chunk_count) AS double precision) AS average_length
    FROM bm25_corpus
),
query_term AS MATERIALIZED (
    SELECT
        bm25_term.term,
        ln(
            1 + (corpus.chunk_count - sum(bm25_term.document_frequency) + 0.5)
            / (sum(bm25_term.document_frequency) + 0.5)
        ) AS idf,
        max(bm25_term.max_term_frequency) AS max_term_frequency,
        min(bm25_term.min_chunk_length) AS min_chunk_length
    FROM unnest(to_tsvector('english', CAST(:query_text AS text))) AS lexeme(term, positions, weights)
    JOIN bm25_term ON bm25_term.term = lexeme.term
    CROSS JOIN corpus
    GROUP BY bm25_term.term, corpus.chunk_count
),
term_bound AS MATERIALIZED (
    SELECT
        query_term.term,
        query_term.idf,
        query_term.idf * query_term.max_term_frequency * (:bm25_k1 + 1)
        / (
            query_term.max_term_frequency
            + :bm25_k1 * (1 - :bm25_b + :bm25_b * query_term.min_chunk_length / corpus.average_length)
        ) AS impact_bound
    FROM query_term
    CROSS JOIN corpus
),
term_role AS MATERIALIZED (
    SELECT
        term_bound.term,
        term_bound.idf,
        term_bound.impact_bound,
        sum(term_bound.impact_bound) OVER (
            ORDER BY term_bound.impact_bound, term_bound.term ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) < max(term_bound.impact_bound) OVER () AS lesser
    FROM term_bound
),
lesser_bound AS MATERIALIZED (
    SELECT count(*) AS terms, coalesce(sum(term_role.impact_bound), 0) * (1 + 1e-9) AS total
    FROM term_role
    WHERE term_role.lesser
),
partial AS MATERIALIZED (
    SELECT
        bm25_posting.chunk_id,
        sum(
            term_role.idf * bm25_posting.term_frequency * (:bm25_k1 + 1)
            / (
                bm25_posting.term_frequency
                + :bm25_k1 * (1 - :bm25_b + :bm25_b * bm25_posting.chunk_length / corpus.average_length)
            )
        ) AS score
    FROM term_role
    CROSS JOIN LATERAL (
        SELECT bm25_posting.chunk_id, bm25_posting.term_frequency, bm25_posting.chunk_length
        FROM bm25_posting
        WHERE bm25_posting.term = term_role.term
        OFFSET 0  -- @constant: keeps the per-term index probe from being flattened into a join
    ) AS bm25_posting
    CROSS JOIN corpus
    WHERE NOT term_role.lesser
    GROUP BY bm25_posting.chunk_id
),
threshold AS MATERIALIZED (
    SELECT count(*) AS chunks, min(best.score) AS score
    FROM (
        SELECT partial.score FROM partial ORDER BY partial.score DESC LIMIT CAST(:bm25_limit AS bigint)
    ) AS best
),
proof AS MATERIALIZED (
    SELECT
        lesser_bound.terms = 0  -- @constant: no lesser terms, so the partial scores are the full ones
        OR (threshold.chunks = CAST(:bm25_limit AS bigint) AND lesser_bound.total < threshold.score) AS proven
    FROM lesser_bound
    CROSS JOIN threshold
),
survivor AS MATERIALIZED (
    SELECT partial.chunk_id, partial.score
    FROM partial
    CROSS JOIN lesser_bound
    CROSS JOIN threshold
    WHERE partial.score + lesser_bound.total >= threshold.score
),
survivor_lesser AS MATERIALIZED (
    SELECT
        bm25_posting.chunk_id,
        sum(
            term_role.idf * bm25_posting.term_frequency * (:bm25_k1 + 1)
            / (
                bm25_posting.term_frequency
                + :bm25_k1 * (1 - :bm25_b + :bm25_b * bm25_posting.chunk_length / corpus.average_length)
            )
        ) AS score
    FROM term_role
    CROSS JOIN LATERAL (
        SELECT bm25_posting.chunk_id, bm25_posting.term_frequency, bm25_posting.chunk_length
        FROM bm25_posting
        WHERE bm25_posting.term = term_role.term
        OFFSET 0  -- @constant: keeps the per-term index probe from being flattened into a join
    ) AS bm25_posting
    JOIN survivor ON survivor.chunk_id = bm25_posting.chunk_id
    CROSS JOIN corpus
    WHERE term_role.lesser
    GROUP BY bm25_posting.chunk_id
),
scored AS (
    SELECT survivor.chunk_id, survivor.score + coalesce(survivor_lesser.score, 0) AS score
    FROM survivor
    LEFT JOIN survivor_lesser ON survivor_lesser.chunk_id = survivor.chunk_id
    WHERE (SELECT proof.proven FROM proof)
    UNION ALL
    SELECT
        bm25_posting.chunk_id,
        sum(
            query_term.idf * bm25_posting.term_frequency * (:bm25_k1 + 1)
            / (
                bm25_posting.term_frequency
                + :bm25_k1 * (1 - :bm25_b + :bm25_b * bm25_posting.chunk_length / corpus.average_length)
            )
        )
    FROM query_term
    CROSS JOIN LATERAL (
        SELECT bm25_posting.chunk_id, bm25_posting.term_frequency, bm25_posting.chunk_length
        FROM bm25_posting
        WHERE bm25_posting.term = query_term.term
        OFFSET 0  -- @constant: keeps the per-term index probe from being flattened into a join
    ) AS bm25_posting
    CROSS JOIN corpus
    WHERE NOT (SELECT proof.proven FROM proof)
    GROUP BY bm25_posting.chunk_id
)
SELECT scored.chunk_id, scored.score
FROM scored
ORDER BY scored.score DESC, scored.chunk_id
LIMIT CAST(:bm25_limit AS bigint)
