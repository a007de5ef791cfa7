"""SQL of the BM25 term statistics. Tokenization is PostgreSQL's: `to_tsvector('english', ...)`
stems and drops stopwords; a lexeme's term frequency is its number of positions and a chunk's length
is the sum of its term frequencies. sql_templates/primitives/bm25.sql ranks with the same
configuration, so the two must change together."""

from pipelines.resources.database import schema_advisory_lock

TEXT_SEARCH_CONFIG = "english"

UNINDEXED_CHUNKS = """
SELECT chunk.id, document.source_key
FROM chunk
JOIN document ON document.id = chunk.document_id
LEFT JOIN bm25_chunk_length AS indexed ON indexed.chunk_id = chunk.id
WHERE document.source_key = ANY(%(keys)s) AND indexed.chunk_id IS NULL
ORDER BY chunk.id
"""

# Postings and lengths of a batch of chunks from their indexed texts; returns each (term, scope set)'s
# number of new postings (its document-frequency increase), their largest term frequency and their
# shortest chunk (which widen the term's impact bounds, 0063).
INDEX_CHUNKS = """
WITH input AS (
    SELECT input.chunk_id, input.indexed_text, chunk.scopes
    FROM unnest(%(chunk_ids)s::text[], %(indexed_texts)s::text[]) AS input(chunk_id, indexed_text)
    JOIN chunk ON chunk.id = input.chunk_id
),
lexeme AS (
    SELECT
        input.chunk_id,
        input.scopes,
        entry.lexeme AS term,
        cardinality(entry.positions) AS term_frequency,
        sum(cardinality(entry.positions)) OVER (PARTITION BY input.chunk_id) AS chunk_length
    FROM input
    CROSS JOIN LATERAL unnest(to_tsvector(%(text_search_config)s::regconfig, input.indexed_text)) AS entry
    -- A term is keyed with its scopes (up to 2,000 bytes) in a B-tree, whose rows hold at most
    -- 2,704 bytes; a longer "word" (a hash, a run of one letter) is never what a question asks.
    WHERE octet_length(entry.lexeme) <= 400
),
posting AS (
    INSERT INTO bm25_posting (term, chunk_id, term_frequency, chunk_length, scopes)
    SELECT term, chunk_id, term_frequency, chunk_length, scopes FROM lexeme
    RETURNING term, scopes, term_frequency, chunk_length
),
length AS (
    INSERT INTO bm25_chunk_length (chunk_id, length, scopes)
    SELECT input.chunk_id, coalesce(sum(lexeme.term_frequency), 0), input.scopes
    FROM input
    LEFT JOIN lexeme ON lexeme.chunk_id = input.chunk_id
    GROUP BY input.chunk_id, input.scopes
)
SELECT term, scopes::text, count(*)::integer, max(term_frequency), min(chunk_length)::integer
FROM posting
GROUP BY term, scopes
"""

# Removes chunks from the statistics (before they are deleted or re-indexed); returns each (term,
# scope set)'s number of removed postings as a negative document-frequency change. The postings
# carry the scopes they were counted under, so a chunk whose scopes change leaves the old set. The
# impact bounds stay as they are: still bounds of the postings left, if looser.
FORGET_CHUNKS = """
WITH removed AS (
    DELETE FROM bm25_posting WHERE chunk_id = ANY(%(chunk_ids)s) RETURNING term, scopes
),
forgotten AS (
    DELETE FROM bm25_chunk_length WHERE chunk_id = ANY(%(chunk_ids)s)
)
SELECT term, scopes::text, -count(*)::integer, NULL::integer, NULL::integer FROM removed GROUP BY term, scopes
"""

# Serialises the few statements that change one schema's document frequencies and corpus size, so
# concurrent runs never deadlock on bm25_term rows and the corpus totals are computed after the last
# commit.
LOCK_STATISTICS = schema_advisory_lock("lanegraph.bm25_statistics", "bm25_term")

# Increases insert new (term, scope set) rows; decreases only ever meet existing rows (and an INSERT
# would check the table's df >= 0 constraint against the negative amount before finding the
# conflict). A scope set travels as its array's text: PostgreSQL has no array of arrays of varying
# length, and array text reads back as the identical array.
DOCUMENT_FREQUENCY_CHANGE = """
SELECT change.term, change.scopes::text[] AS scopes, change.amount
FROM unnest(%(terms)s::text[], %(scopes)s::text[], %(amounts)s::integer[]) AS change(term, scopes, amount)
"""

RAISE_DOCUMENT_FREQUENCIES = """
INSERT INTO bm25_term (term, scopes, document_frequency, max_term_frequency, min_chunk_length)
SELECT change.term, change.scopes::text[], change.amount, change.max_term_frequency, change.min_chunk_length
FROM unnest(
    %(terms)s::text[], %(scopes)s::text[], %(amounts)s::integer[], %(max_term_frequencies)s::integer[],
    %(min_chunk_lengths)s::integer[]
) AS change(term, scopes, amount, max_term_frequency, min_chunk_length)
ORDER BY change.term, change.scopes
ON CONFLICT (term, scopes) DO UPDATE SET
    document_frequency = bm25_term.document_frequency + excluded.document_frequency,
    max_term_frequency = greatest(bm25_term.max_term_frequency, excluded.max_term_frequency),
    min_chunk_length = least(bm25_term.min_chunk_length, excluded.min_chunk_length)
"""

LOWER_DOCUMENT_FREQUENCIES = f"""
UPDATE bm25_term
SET document_frequency = bm25_term.document_frequency + change.amount
FROM ({DOCUMENT_FREQUENCY_CHANGE}) AS change
WHERE bm25_term.term = change.term AND bm25_term.scopes = change.scopes
"""

DROP_UNUSED_TERMS = """
DELETE FROM bm25_term WHERE term = ANY(%(terms)s) AND document_frequency = 0
"""

# N and the total length per scope set over the whole index: one pass over a two-column table,
# exact by construction, so no running total can drift; a scope set left without chunks goes.
REFRESH_CORPUS = """
WITH counted AS (
    SELECT scopes, count(*) AS chunk_count, sum(length) AS total_length
    FROM bm25_chunk_length
    GROUP BY scopes
),
emptied AS (
    DELETE FROM bm25_corpus WHERE NOT EXISTS (SELECT FROM counted WHERE counted.scopes = bm25_corpus.scopes)
)
INSERT INTO bm25_corpus (scopes, chunk_count, total_length)
SELECT scopes, chunk_count, total_length FROM counted
ORDER BY scopes
ON CONFLICT (scopes) DO UPDATE SET
    chunk_count = excluded.chunk_count,
    total_length = excluded.total_length
WHERE (bm25_corpus.chunk_count, bm25_corpus.total_length) IS DISTINCT FROM (excluded.chunk_count, excluded.total_length)
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

# Every statistic recomputed from the postings and compared with what the ranking reads, per scope
# set; the totals are what an unconfined caller's ranking sums.
STATISTICS_HEALTH = """
WITH counted_corpus AS (
    SELECT scopes, count(*) AS chunk_count, sum(length) AS total_length FROM bm25_chunk_length GROUP BY scopes
)
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
            -- The ranking reads each posting's copy of its chunk's length.
            OR bool_or(posting.chunk_length <> indexed.length)
    ) AS wrong) AS wrong_lengths,
    (SELECT count(*) FROM bm25_posting
     WHERE NOT EXISTS (SELECT FROM bm25_chunk_length AS indexed WHERE indexed.chunk_id = bm25_posting.chunk_id)
    ) AS postings_without_length,
    -- Statistics counted under other scopes than their chunk's would be shown to the wrong callers.
    (SELECT count(*) FROM bm25_chunk_length AS indexed JOIN chunk ON chunk.id = indexed.chunk_id
     WHERE indexed.scopes <> chunk.scopes
    ) + (SELECT count(*) FROM bm25_posting AS posting JOIN bm25_chunk_length AS indexed USING (chunk_id)
     WHERE posting.scopes <> indexed.scopes
    ) AS wrong_scopes,
    (SELECT count(*) FROM (
        SELECT counted.term
        FROM (SELECT term, scopes, count(*) AS document_frequency FROM bm25_posting GROUP BY term, scopes) AS counted
        FULL JOIN bm25_term AS stored ON stored.term = counted.term AND stored.scopes = counted.scopes
        WHERE counted.document_frequency IS DISTINCT FROM stored.document_frequency
    ) AS wrong) AS wrong_document_frequencies,
    -- A bound a posting exceeds would let the ranking skip a chunk that belongs in its top k.
    (SELECT count(*) FROM (
        SELECT term, scopes, max(term_frequency) AS max_term_frequency, min(chunk_length) AS min_chunk_length
        FROM bm25_posting GROUP BY term, scopes
    ) AS counted
     JOIN bm25_term AS stored ON stored.term = counted.term AND stored.scopes = counted.scopes
     WHERE stored.max_term_frequency < counted.max_term_frequency OR stored.min_chunk_length > counted.min_chunk_length
    ) AS broken_impact_bounds,
    (SELECT count(*) FROM counted_corpus
     FULL JOIN bm25_corpus AS stored ON stored.scopes = counted_corpus.scopes
     WHERE (counted_corpus.chunk_count, counted_corpus.total_length)
           IS DISTINCT FROM (stored.chunk_count, stored.total_length)
    ) AS wrong_corpus_rows,
    (SELECT count(*) FROM bm25_chunk_length) AS indexed_chunks,
    (SELECT coalesce(avg(length), 0) FROM bm25_chunk_length) AS average_length,
    (SELECT coalesce(sum(chunk_count), 0) FROM bm25_corpus) AS stored_chunk_count,
    (SELECT coalesce(sum(total_length) / nullif(sum(chunk_count), 0), 0) FROM bm25_corpus) AS stored_average_length
"""
