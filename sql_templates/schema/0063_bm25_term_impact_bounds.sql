-- Per (term, scope set): the largest term frequency and the shortest chunk among its postings, so the
-- BM25 ranking can bound what a term adds to any chunk's score and skip scoring chunks that cannot
-- reach the top (sql_templates/primitives/bm25.sql). A term's BM25 weight grows with the frequency
-- and shrinks with the chunk's length, so the weight at (largest frequency, shortest chunk) is at
-- least its weight in every chunk, for any k1 >= 0 and 0 <= b <= 1. Kept per scope set like the
-- document frequency beside it: a caller's bounds are over exactly the postings it may read.
--
-- The write side only ever widens the bounds (a new posting may raise the maximum or lower the
-- minimum; a removed one leaves them), so they stay bounds, if looser, until the term's row goes.
--
-- The defaults are the loosest bounds, true of any posting (the bound becomes idf * (k1 + 1)), so a
-- row written without them, or one whose term has no postings, is never wrong: only looser.
ALTER TABLE bm25_term ADD COLUMN IF NOT EXISTS max_term_frequency integer NOT NULL DEFAULT 2147483647;
ALTER TABLE bm25_term ADD COLUMN IF NOT EXISTS min_chunk_length integer NOT NULL DEFAULT 1;

UPDATE bm25_term
SET max_term_frequency = counted.max_term_frequency, min_chunk_length = counted.min_chunk_length
FROM (
    SELECT term, scopes, max(term_frequency) AS max_term_frequency, min(chunk_length) AS min_chunk_length
    FROM bm25_posting
    GROUP BY term, scopes
) AS counted
WHERE counted.term = bm25_term.term AND counted.scopes = bm25_term.scopes
  AND (bm25_term.max_term_frequency, bm25_term.min_chunk_length)
      IS DISTINCT FROM (counted.max_term_frequency, counted.min_chunk_length);

ALTER TABLE bm25_term DROP CONSTRAINT IF EXISTS bm25_term_impact_bounds_check;
ALTER TABLE bm25_term
    ADD CONSTRAINT bm25_term_impact_bounds_check CHECK (max_term_frequency > 0 AND min_chunk_length > 0);
