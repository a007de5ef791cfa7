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
        ) AS idf
    FROM unnest(to_tsvector('english', CAST(:query_text AS text))) AS lexeme(term, positions, weights)
    JOIN bm25_term ON bm25_term.term = lexeme.term
    CROSS JOIN corpus
    GROUP BY bm25_term.term, corpus.chunk_count
)
SELECT
    bm25_posting.chunk_id,
    sum(
        query_term.idf * bm25_posting.term_frequency * (:bm25_k1 + 1)
        / (
            bm25_posting.term_frequency
            + :bm25_k1 * (1 - :bm25_b + :bm25_b * bm25_posting.chunk_length / corpus.average_length)
        )
    ) AS score
FROM query_term
CROSS JOIN LATERAL (
    SELECT bm25_posting.chunk_id, bm25_posting.term_frequency, bm25_posting.chunk_length
    FROM bm25_posting
    WHERE bm25_posting.term = query_term.term
    OFFSET 0  -- @constant: keeps the per-term index probe from being flattened into a join
) AS bm25_posting
CROSS JOIN corpus
GROUP BY bm25_posting.chunk_id
ORDER BY score DESC, bm25_posting.chunk_id
LIMIT CAST(:bm25_limit AS bigint)
