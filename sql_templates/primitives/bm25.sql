-- bm25: chunks ranked by Okapi BM25 for :query_text, best first.
--
-- Terms are PostgreSQL's English lexemes (stemmed, stopwords dropped), the same to_tsvector the
-- bm25_index asset wrote the postings with; a term's frequency in a chunk is its number of positions
-- and a chunk's length is the sum of its frequencies. Only the postings of the question's own
-- lexemes are read, through the primary key of bm25_posting (term, chunk_id).
--   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))          (Lucene's variant: never negative)
--   score(c, q) = sum over t in q of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))
-- N and avglen come from bm25_corpus, df from bm25_term; the write side keeps both in step with the
-- postings.
WITH query_term AS (
    SELECT lexeme.term
    FROM unnest(to_tsvector('english', CAST(:query_text AS text))) AS lexeme(term, positions, weights)
),
matched AS (
    SELECT
        bm25_posting.chunk_id,
        bm25_posting.term_frequency,
        bm25_term.document_frequency
    FROM query_term
    JOIN bm25_term ON bm25_term.term = query_term.term
    JOIN bm25_posting ON bm25_posting.term = query_term.term
)
SELECT
    matched.chunk_id,
    sum(
        ln(1 + (bm25_corpus.chunk_count - matched.document_frequency + 0.5) / (matched.document_frequency + 0.5))
        * matched.term_frequency * (:bm25_k1 + 1)
        / (
            matched.term_frequency
            + :bm25_k1 * (1 - :bm25_b + :bm25_b * bm25_chunk_length.length / bm25_corpus.average_length)
        )
    ) AS score
FROM matched
JOIN bm25_chunk_length ON bm25_chunk_length.chunk_id = matched.chunk_id
CROSS JOIN bm25_corpus
GROUP BY matched.chunk_id
ORDER BY score DESC, matched.chunk_id
LIMIT CAST(:bm25_limit AS bigint)
