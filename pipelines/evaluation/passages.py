"""From evidence to passages: a chunk or fact counts for the passage (document) it came from.

In a benchmark corpus every passage is one document whose id is the passage id, so an evidence
row's passage is its document id, or the document of its source chunk. Rows that name neither
(community, profile and overview summaries, entity catalog lines) are not passages and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import psycopg

from pipelines.write.documents.chunking import indexed_text

CHUNK_DOCUMENTS_SQL = "SELECT id, document_id FROM chunk"
CHUNK_PASSAGES_SQL = """
SELECT chunk.id, document.title, chunk.text
FROM chunk
JOIN document ON document.id = chunk.document_id
WHERE chunk.id = ANY(%s)
"""

# (document_id, source_chunk_id) of one evidence row, either possibly NULL.
EvidenceSource = tuple[str | None, str | None]


def load_chunk_documents(connection: psycopg.Connection) -> dict[str, str]:
    return dict(connection.execute(CHUNK_DOCUMENTS_SQL).fetchall())


def passage_ranking(evidence: Iterable[EvidenceSource], chunk_documents: Mapping[str, str]) -> list[str]:
    """The passages in evidence order, each once, at the rank of its first (best) evidence."""
    ranking: dict[str, None] = {}
    for document_id, chunk_id in evidence:
        passage = document_id or (chunk_documents.get(chunk_id) if chunk_id else None)
        if passage is not None:
            ranking.setdefault(passage, None)
    return list(ranking)


def chunk_passages(connection: psycopg.Connection, chunk_ids: Sequence[str]) -> list[str]:
    """Each chunk's text as the rankings saw it (title, blank line, chunk), in the order given."""
    texts = {
        chunk_id: indexed_text(title, text)
        for chunk_id, title, text in connection.execute(CHUNK_PASSAGES_SQL, (list(chunk_ids),)).fetchall()
    }
    return [texts[chunk_id] for chunk_id in chunk_ids if chunk_id in texts]
