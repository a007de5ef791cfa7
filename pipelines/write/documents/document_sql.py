"""SQL of the source registry, documents, chunks and chunk embeddings. Statements only; values are
always bound (psycopg `%(name)s`), and the modules beside this one run them."""

# --- source registry -------------------------------------------------------------------------

REGISTERED_SOURCES = """
SELECT key, path, signature, registered_hash, missing_since
FROM document_source
WHERE key = ANY(%(keys)s) OR starts_with(path, %(folder_prefix)s)
"""

# The signature starts with the file's size in bytes (`sources.file_signature`).
SOURCE_BYTES = """
SELECT coalesce(sum(split_part(signature, ':', 1)::bigint), 0)
FROM document_source
WHERE key = ANY(%(keys)s)
"""

REGISTER_SOURCE = """
INSERT INTO document_source (key, path, kind, signature, registered_hash)
VALUES (%(key)s, %(path)s, %(kind)s, %(signature)s, %(registered_hash)s)
ON CONFLICT (key) DO UPDATE SET
    path = excluded.path,
    kind = excluded.kind,
    signature = excluded.signature,
    registered_hash = excluded.registered_hash,
    registered_at = now(),
    missing_since = NULL
"""

MARK_SOURCES_MISSING = """
UPDATE document_source
SET registered_hash = NULL, missing_since = now()
WHERE key = ANY(%(keys)s) AND missing_since IS NULL
"""

UNFINISHED_SOURCES = """
SELECT key, registered_hash
FROM document_source
WHERE key = ANY(%(keys)s) AND registered_hash IS DISTINCT FROM materialized_hash
ORDER BY key
"""

SOURCES = """
SELECT key, path, kind
FROM document_source
WHERE key = ANY(%(keys)s)
"""

MARK_SOURCE_MATERIALIZED = """
UPDATE document_source SET materialized_hash = %(file_hash)s WHERE key = %(key)s
"""

PARTITION_DOCUMENTS = """
SELECT id, source_key FROM document WHERE source_key = ANY(%(keys)s) ORDER BY id
"""

# --- documents ---------------------------------------------------------------------------------

DOCUMENT_STATES = """
SELECT id, source_key, content_hash, retracted_at
FROM document
WHERE source_key = ANY(%(keys)s) OR id = ANY(%(ids)s)
"""

UPSERT_DOCUMENT = """
INSERT INTO document (
    id, title, uri, body, content_hash, observed_at, expires_at, scopes, source_key,
    conversation, session, speaker, turn
)
VALUES (
    %(id)s, %(title)s, %(uri)s, %(body)s, %(content_hash)s, %(observed_at)s, %(expires_at)s,
    %(scopes)s, %(source_key)s, %(conversation)s, %(session)s, %(speaker)s, %(turn)s
)
ON CONFLICT (id) DO UPDATE SET
    title = excluded.title,
    uri = excluded.uri,
    body = excluded.body,
    content_hash = excluded.content_hash,
    observed_at = excluded.observed_at,
    expires_at = excluded.expires_at,
    scopes = excluded.scopes,
    source_key = excluded.source_key,
    conversation = excluded.conversation,
    session = excluded.session,
    speaker = excluded.speaker,
    turn = excluded.turn,
    updated_at = now(),
    retracted_at = NULL
"""

# A retracted document's claims stop being believed now; the rows stay for the record. A fact
# recorded by a transaction that started after this one keeps recorded_to >= recorded_from.
CLOSE_DOCUMENT_FACTS = """
UPDATE fact
SET recorded_to = greatest(now(), recorded_from)
WHERE document_id = ANY(%(ids)s) AND recorded_to IS NULL
"""

DOCUMENT_CHUNK_IDS = """
SELECT id FROM chunk WHERE document_id = ANY(%(ids)s)
"""

DELETE_DOCUMENT_CHUNKS = """
DELETE FROM chunk WHERE document_id = ANY(%(ids)s)
"""

RETRACT_DOCUMENTS = """
UPDATE document
SET retracted_at = now(), updated_at = now(), chunked_with = NULL
WHERE id = ANY(%(ids)s) AND retracted_at IS NULL
"""

DOCUMENT_COUNT = "SELECT count(*) FROM document WHERE retracted_at IS NULL"

DOCUMENT_PREVIEW = """
SELECT id, title, length(body) AS characters, scopes, updated_at
FROM document
WHERE source_key = ANY(%(keys)s)
ORDER BY updated_at DESC, id
LIMIT 5
"""

# --- chunks ------------------------------------------------------------------------------------

CHUNKING_STATES = """
SELECT id, source_key, content_hash, chunked_with
FROM document
WHERE source_key = ANY(%(keys)s) AND retracted_at IS NULL
ORDER BY id
"""

DOCUMENTS_TO_CHUNK = """
SELECT id, title, body, content_hash, scopes
FROM document
WHERE id = ANY(%(ids)s)
ORDER BY id
"""

EXISTING_CHUNKS = """
SELECT id, document_id, content_hash, scopes
FROM chunk
WHERE document_id = ANY(%(ids)s)
"""

INSERT_CHUNK = """
INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, scopes)
VALUES (%(id)s, %(document_id)s, %(position)s, %(text)s, %(token_count)s, %(content_hash)s, %(scopes)s)
"""

# New text drops the embedding (it described the old text); new scopes alone keep it.
UPDATE_CHUNK = """
UPDATE chunk SET
    text = %(text)s,
    token_count = %(token_count)s,
    scopes = %(scopes)s,
    embedding = CASE WHEN content_hash = %(content_hash)s THEN embedding END,
    embedding_model = CASE WHEN content_hash = %(content_hash)s THEN embedding_model END,
    embedded_hash = CASE WHEN content_hash = %(content_hash)s THEN embedded_hash END,
    content_hash = %(content_hash)s
WHERE id = %(id)s
"""

DELETE_CHUNKS = "DELETE FROM chunk WHERE id = ANY(%(ids)s)"

MARK_DOCUMENT_CHUNKED = "UPDATE document SET chunked_with = %(fingerprint)s WHERE id = %(id)s"

CHUNK_COUNT = "SELECT count(*) FROM chunk"

DOCUMENT_CHUNK_COUNTS = """
SELECT document.source_key, count(*)
FROM chunk
JOIN document ON document.id = chunk.document_id
WHERE chunk.document_id = ANY(%(ids)s)
GROUP BY document.source_key
"""

CHUNK_PREVIEW = """
SELECT id, token_count, text
FROM chunk
WHERE document_id = ANY(%(ids)s)
ORDER BY document_id, position
LIMIT 5
"""

# What the embedding model and BM25 read for a chunk: its document's title and its text, fetched a
# batch at a time so a large partition is never held in memory whole.
CHUNK_TEXTS = """
SELECT chunk.id, document.title, chunk.text
FROM chunk
JOIN document ON document.id = chunk.document_id
WHERE chunk.id = ANY(%(ids)s)
ORDER BY chunk.id
"""

# --- chunk embeddings ---------------------------------------------------------------------------

# Chunks of the partitions whose embedding is missing, from another model, or of older text.
STALE_EMBEDDINGS = """
SELECT chunk.id, chunk.content_hash, chunk.embedding IS NULL AS missing, document.source_key
FROM chunk
JOIN document ON document.id = chunk.document_id
WHERE document.source_key = ANY(%(keys)s)
  AND (
      chunk.embedding IS NULL
      OR chunk.embedding_model IS DISTINCT FROM %(model)s
      OR chunk.embedded_hash IS DISTINCT FROM chunk.content_hash
  )
ORDER BY chunk.id
"""

# The content-hash guard skips a chunk whose text changed while it was being embedded.
WRITE_EMBEDDING = """
UPDATE chunk
SET embedding = %(embedding)s, embedding_model = %(model)s, embedded_hash = %(content_hash)s
WHERE id = %(id)s AND content_hash = %(content_hash)s
"""

PARTITION_CHUNK_COUNTS = """
SELECT document.source_key, count(*)
FROM chunk
JOIN document ON document.id = chunk.document_id
WHERE document.source_key = ANY(%(keys)s)
GROUP BY document.source_key
"""

EMBEDDED_COUNT = "SELECT count(*) FROM chunk WHERE embedding IS NOT NULL"

EMBEDDING_PREVIEW = """
SELECT id, embedding_model, vector_dims(embedding) AS dimensions, left(text, 60) AS text
FROM chunk
WHERE id = ANY(%(ids)s)
ORDER BY id
LIMIT 5
"""

EMBEDDING_HEALTH = """
SELECT
    count(*) AS chunks,
    count(*) FILTER (WHERE embedding IS NULL) AS missing,
    count(*) FILTER (WHERE vector_dims(embedding) <> %(dimension)s) AS wrong_width,
    count(*) FILTER (
        WHERE embedding IS NOT NULL
          AND (embedding_model IS DISTINCT FROM %(model)s OR embedded_hash IS DISTINCT FROM content_hash)
    ) AS stale
FROM chunk
"""
