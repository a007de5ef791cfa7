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

DELETE_TITLE_LINKS = "DELETE FROM title_link"

# The links found in Python arrive by COPY, then take their scopes from both ends in one statement:
# a link is readable by a caller who may read both its chunk and the page it names.
CREATE_FOUND_LINKS = """
CREATE TEMPORARY TABLE found_title_link (
    chunk_id text, document_id text, linked_document_id text, name text
) ON COMMIT DROP
"""

COPY_FOUND_LINKS = "COPY found_title_link (chunk_id, document_id, linked_document_id, name) FROM STDIN"

INSERT_FOUND_LINKS = """
INSERT INTO title_link (chunk_id, document_id, linked_document_id, name, scopes)
SELECT found.chunk_id, found.document_id, found.linked_document_id, found.name,
       ARRAY(SELECT DISTINCT scope FROM unnest(chunk.scopes || linked.scopes) AS scope ORDER BY scope)
FROM found_title_link AS found
JOIN chunk ON chunk.id = found.chunk_id
JOIN document AS linked ON linked.id = found.linked_document_id
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
