"""SQL of the title links (`title_links`): statements only, every value a bind parameter."""

# A page is named by its title without the parenthesised qualifier, unless that is stopwords only
# (0062). Retracted documents keep their row for the audit, but no longer link or get linked.
DOCUMENT_NAMES = """
SELECT id, title_name FROM document
WHERE retracted_at IS NULL AND title_name_is_distinctive
ORDER BY id
"""

CHUNK_TEXTS = """
SELECT chunk.id, chunk.document_id, chunk.text
FROM chunk JOIN document ON document.id = chunk.document_id
WHERE document.retracted_at IS NULL
ORDER BY chunk.id
"""

# The links found in Python arrive by COPY and take their scopes from both ends: a link is readable
# by a caller who may read both its chunk and the page it names. Only the difference is written, so
# an ingest of one document leaves every other link's row alone.
CREATE_FOUND_LINKS = """
CREATE TEMPORARY TABLE found_title_link (
    chunk_id text, document_id text, linked_document_id text, name text, scopes text[]
) ON COMMIT DROP
"""

COPY_FOUND_LINKS = "COPY found_title_link (chunk_id, document_id, linked_document_id, name) FROM STDIN"

SCOPE_FOUND_LINKS = """
UPDATE found_title_link AS found
SET scopes = ARRAY(SELECT DISTINCT scope FROM unnest(chunk.scopes || linked.scopes) AS scope ORDER BY scope)
FROM chunk, document AS linked
WHERE chunk.id = found.chunk_id AND linked.id = found.linked_document_id
"""

DELETE_LOST_LINKS = """
DELETE FROM title_link
WHERE NOT EXISTS (
    SELECT 1 FROM found_title_link AS found
    WHERE found.document_id = title_link.document_id
      AND found.chunk_id = title_link.chunk_id
      AND found.linked_document_id = title_link.linked_document_id
      AND found.name = title_link.name
      AND found.scopes = title_link.scopes
)
"""

INSERT_NEW_LINKS = """
INSERT INTO title_link (chunk_id, document_id, linked_document_id, name, scopes)
SELECT found.chunk_id, found.document_id, found.linked_document_id, found.name, found.scopes
FROM found_title_link AS found
WHERE found.scopes IS NOT NULL
ON CONFLICT (document_id, chunk_id, linked_document_id) DO NOTHING
"""

MOST_LINKED_DOCUMENTS = """
SELECT document.title, count(*) AS links
FROM title_link JOIN document ON document.id = title_link.linked_document_id
GROUP BY document.id, document.title
ORDER BY links DESC, document.title
LIMIT 10
"""

# Links that a reader could follow past what it may read, or to a retracted page: none after a refresh.
LINKS_OUT_OF_STEP = """
SELECT count(*)
FROM title_link
JOIN chunk ON chunk.id = title_link.chunk_id
JOIN document AS linked ON linked.id = title_link.linked_document_id
WHERE linked.retracted_at IS NOT NULL
   OR NOT (chunk.scopes <@ title_link.scopes AND linked.scopes <@ title_link.scopes)
"""
