-- BM25 statistics per scope set, so row security confines them like the chunks they count.
--
-- A single row per term (and one corpus row) had to be readable by every caller, which showed each
-- tenant the others' vocabulary and document frequencies counted over chunks it cannot read. Now
-- every statistic is kept per exact scope set of the chunks it counts, and the row carries that set:
-- a caller sees a row exactly when it sees the chunks behind it, so the sums over its visible rows
-- are the statistics of its visible chunks (N, total length, df), and the owner's sums are global.
--
-- Idempotent: the old shape is converted (and its rows recounted from the postings and lengths,
-- which already carry their chunk's scopes) only when it is still there.
DO $per_scope$
BEGIN
    IF EXISTS (
        SELECT FROM pg_attribute
        WHERE attrelid = to_regclass('bm25_corpus') AND attname = 'singleton' AND NOT attisdropped
    ) THEN
        DROP TABLE bm25_corpus;
    END IF;
    IF (
        SELECT array_agg(a.attname::text ORDER BY a.attname)
        FROM pg_constraint c
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
        WHERE c.conrelid = to_regclass('bm25_term') AND c.contype = 'p'
    ) = ARRAY['term'] THEN
        ALTER TABLE bm25_term DROP CONSTRAINT bm25_term_pkey;
        DELETE FROM bm25_term;
        INSERT INTO bm25_term (term, scopes, document_frequency)
        SELECT term, scopes, count(*) FROM bm25_posting GROUP BY term, scopes;
        -- A caller's idf sums a term's rows: the key's leading term keeps that one index probe.
        ALTER TABLE bm25_term ADD PRIMARY KEY (term, scopes);
    END IF;
END
$per_scope$;

CREATE TABLE IF NOT EXISTS bm25_corpus (
    scopes        text[] PRIMARY KEY,
    chunk_count   bigint NOT NULL CHECK (chunk_count > 0),
    -- The sum, not the average: sums add up over the rows a caller sees, averages do not.
    total_length  bigint NOT NULL CHECK (total_length >= 0)
);

INSERT INTO bm25_corpus (scopes, chunk_count, total_length)
SELECT scopes, count(*), sum(length) FROM bm25_chunk_length GROUP BY scopes
ON CONFLICT (scopes) DO NOTHING;

-- The recreated corpus table needs its policies and grants again.
SELECT lanegraph_apply_row_security();
