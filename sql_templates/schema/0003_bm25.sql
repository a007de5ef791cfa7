-- Term statistics for Okapi BM25. Postings are written per chunk; document frequencies and corpus
-- size are kept in step with them so a query reads only the postings of its own terms.
CREATE TABLE IF NOT EXISTS bm25_posting (
    term            text NOT NULL,
    chunk_id        text NOT NULL REFERENCES chunk (id) ON DELETE CASCADE,
    term_frequency  integer NOT NULL CHECK (term_frequency > 0),
    scopes          text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (term, chunk_id)
);
CREATE INDEX IF NOT EXISTS bm25_posting_chunk_idx ON bm25_posting (chunk_id);

CREATE TABLE IF NOT EXISTS bm25_chunk_length (
    chunk_id  text PRIMARY KEY REFERENCES chunk (id) ON DELETE CASCADE,
    length    integer NOT NULL CHECK (length >= 0),
    scopes    text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS bm25_term (
    term                text PRIMARY KEY,
    document_frequency  integer NOT NULL CHECK (document_frequency >= 0),
    scopes              text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS bm25_corpus (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    chunk_count     bigint NOT NULL,
    average_length  double precision NOT NULL,
    scopes          text[] NOT NULL DEFAULT '{}'
);
