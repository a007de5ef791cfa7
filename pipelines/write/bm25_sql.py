"""SQL of the BM25 term statistics. Tokenization is PostgreSQL's: `to_tsvector('english', ...)`
stems and drops stopwords; a lexeme's term frequency is its number of positions and a chunk's length
is the sum of its term frequencies. sql_templates/primitives/bm25.sql ranks with the same
configuration, so the two must change together."""

TEXT_SEARCH_CONFIG = "english"
# Serialises the few statements that change document frequencies and corpus size, so concurrent
# runs never deadlock on bm25_term rows and the corpus totals are computed after the last commit.
STATISTICS_LOCK_KEY = 0x424D3235

UNINDEXED_CHUNKS = """
SELECT chunk.id
FROM chunk
JOIN document ON document.id = chunk.document_id
LEFT JOIN bm25_chunk_length AS indexed ON indexed.chunk_id = chunk.id
WHERE document.source_key = ANY(%(keys)s) AND indexed.chunk_id IS NULL
ORDER BY chunk.id
"""

# Postings and lengths of a batch of chunks from their indexed texts; returns each term's number of
# new postings (its document-frequency increase).
INDEX_CHUNKS = """
WITH input AS (
    SELECT input.chunk_id, input.indexed_text, chunk.scopes
    FROM unnest(%(chunk_ids)s::text[], %(indexed_texts)s::text[]) AS input(chunk_id, indexed_text)
    JOIN chunk ON chunk.id = input.chunk_id
),
lexeme AS (
    SELECT input.chunk_id, input.scopes, entry.lexeme AS term, cardinality(entry.positions) AS term_frequency
    FROM input
    CROSS JOIN LATERAL unnest(to_tsvector(%(text_search_config)s::regconfig, input.indexed_text)) AS entry
),
posting AS (
    INSERT INTO bm25_posting (term, chunk_id, term_frequency, scopes)
    SELECT term, chunk_id, term_frequency, scopes FROM lexeme
    RETURNING term
),
length AS (
    INSERT INTO bm25_chunk_length (chunk_id, length, scopes)
    SELECT input.chunk_id, coalesce(sum(lexeme.term_frequency), 0), input.scopes
    FROM input
    LEFT JOIN lexeme ON lexeme.chunk_id = input.chunk_id
    GROUP BY input.chunk_id, input.scopes
)
SELECT term, count(*)::integer FROM posting GROUP BY term
"""

# Removes chunks from the statistics (before they are deleted or re-indexed); returns each term's
# number of removed postings as a negative document-frequency change.
FORGET_CHUNKS = """
WITH removed AS (
    DELETE FROM bm25_posting WHERE chunk_id = ANY(%(chunk_ids)s) RETURNING term
),
forgotten AS (
    DELETE FROM bm25_chunk_length WHERE chunk_id = ANY(%(chunk_ids)s)
)
SELECT term, -count(*)::integer FROM removed GROUP BY term
"""

LOCK_STATISTICS = "SELECT pg_advisory_xact_lock(%(key)s)"

# Increases insert new terms; decreases only ever meet existing rows (and an INSERT would check
# the table's df >= 0 constraint against the negative amount before finding the conflict).
RAISE_DOCUMENT_FREQUENCIES = """
INSERT INTO bm25_term (term, document_frequency)
SELECT change.term, change.amount
FROM unnest(%(terms)s::text[], %(amounts)s::integer[]) AS change(term, amount)
ORDER BY change.term
ON CONFLICT (term) DO UPDATE SET document_frequency = bm25_term.document_frequency + excluded.document_frequency
"""

LOWER_DOCUMENT_FREQUENCIES = """
UPDATE bm25_term
SET document_frequency = bm25_term.document_frequency + change.amount
FROM unnest(%(terms)s::text[], %(amounts)s::integer[]) AS change(term, amount)
WHERE bm25_term.term = change.term
"""

DROP_UNUSED_TERMS = """
DELETE FROM bm25_term WHERE term = ANY(%(terms)s) AND document_frequency = 0
"""

# N and the average length over the whole index: one pass over a two-column table, exact by
# construction, so no running total can drift.
REFRESH_CORPUS = """
INSERT INTO bm25_corpus (singleton, chunk_count, average_length)
SELECT true, count(*), coalesce(avg(length), 0) FROM bm25_chunk_length
ON CONFLICT (singleton) DO UPDATE SET
    chunk_count = excluded.chunk_count,
    average_length = excluded.average_length
"""

INDEXED_COUNT = "SELECT count(*) FROM bm25_chunk_length"

INDEX_PREVIEW = """
SELECT indexed.chunk_id, indexed.length, count(posting.term) AS terms
FROM bm25_chunk_length AS indexed
LEFT JOIN bm25_posting AS posting ON posting.chunk_id = indexed.chunk_id
WHERE indexed.chunk_id = ANY(%(chunk_ids)s)
GROUP BY indexed.chunk_id, indexed.length
ORDER BY indexed.chunk_id
LIMIT 5
"""

# Every statistic recomputed from the postings and compared with what the ranking reads.
STATISTICS_HEALTH = """
SELECT
    (SELECT count(*) FROM chunk) AS chunks,
    (SELECT count(*) FROM chunk
     WHERE NOT EXISTS (SELECT FROM bm25_chunk_length AS indexed WHERE indexed.chunk_id = chunk.id)
    ) AS unindexed_chunks,
    (SELECT count(*) FROM (
        SELECT indexed.chunk_id
        FROM bm25_chunk_length AS indexed
        LEFT JOIN bm25_posting AS posting ON posting.chunk_id = indexed.chunk_id
        GROUP BY indexed.chunk_id, indexed.length
        HAVING coalesce(sum(posting.term_frequency), 0) <> indexed.length
    ) AS wrong) AS wrong_lengths,
    (SELECT count(*) FROM bm25_posting
     WHERE NOT EXISTS (SELECT FROM bm25_chunk_length AS indexed WHERE indexed.chunk_id = bm25_posting.chunk_id)
    ) AS postings_without_length,
    (SELECT count(*) FROM (
        SELECT counted.term
        FROM (SELECT term, count(*) AS document_frequency FROM bm25_posting GROUP BY term) AS counted
        FULL JOIN bm25_term AS stored ON stored.term = counted.term
        WHERE counted.document_frequency IS DISTINCT FROM stored.document_frequency
    ) AS wrong) AS wrong_document_frequencies,
    (SELECT count(*) FROM bm25_chunk_length) AS indexed_chunks,
    (SELECT coalesce(avg(length), 0) FROM bm25_chunk_length) AS average_length,
    coalesce((SELECT chunk_count FROM bm25_corpus), 0) AS stored_chunk_count,
    coalesce((SELECT average_length FROM bm25_corpus), 0) AS stored_average_length
"""
