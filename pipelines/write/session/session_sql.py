"""SQL of working memory: loading session items and promoting them to documents. Statements only."""

STORED_ITEMS = "SELECT id, text, scopes, promoted_at IS NOT NULL FROM session_item WHERE id = ANY(%(ids)s)"

# A promoted item stays as it was promoted: its document is now the record of it.
UPSERT_ITEM = """
INSERT INTO session_item (id, text, embedding, created_at, scopes)
VALUES (%(id)s, %(text)s, %(embedding)s, coalesce(%(created_at)s, now()), %(scopes)s)
ON CONFLICT (id) DO UPDATE SET
    text = excluded.text,
    embedding = excluded.embedding,
    created_at = excluded.created_at,
    scopes = excluded.scopes
WHERE session_item.promoted_at IS NULL
"""

# One item written on a caller's behalf; its time, for the caller's reply.
REMEMBER_ITEM = UPSERT_ITEM.rstrip() + "\nRETURNING created_at\n"

DUE_ITEMS = """
SELECT id, text, created_at, scopes FROM session_item
WHERE promoted_at IS NULL AND created_at <= now() - %(hours)s * interval '1 hour'
ORDER BY created_at, id
"""

YOUNG_ITEM_COUNT = """
SELECT count(*) FROM session_item
WHERE promoted_at IS NULL AND created_at > now() - %(hours)s * interval '1 hour'
"""

# Only an item whose document really landed is marked; one that failed stays in working memory.
# Landed means found: chunked, and no chunk awaiting its embedding (the sources lane shows no
# document before that), so the item leaves working memory as its document enters the sources lane.
MARK_PROMOTED = """
UPDATE session_item s SET promoted_at = now(), document_id = %(prefix)s || s.id
WHERE s.id = ANY(%(ids)s) AND s.promoted_at IS NULL
  AND EXISTS (
      SELECT 1 FROM document d
      WHERE d.id = %(prefix)s || s.id AND d.retracted_at IS NULL
        AND EXISTS (SELECT 1 FROM chunk c WHERE c.document_id = d.id)
        AND NOT EXISTS (SELECT 1 FROM chunk c WHERE c.document_id = d.id AND c.embedding IS NULL)
  )
RETURNING s.id
"""

SESSION_ITEM_COUNTS = """
SELECT count(*) FILTER (WHERE promoted_at IS NULL), count(*) FILTER (WHERE promoted_at IS NOT NULL)
FROM session_item
"""
