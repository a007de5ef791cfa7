"""The entities_and_facts step for a batch of documents: read chunks, extract, write each document.

Extraction (the slow part) runs outside any transaction; each document is then written in its own
transaction, so one bad document never leaves another half-written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pipelines.resources.database import Database
from pipelines.resources.extractor import Extractor
from pipelines.write import extraction_sql as q
from pipelines.write.extraction_store import (
    DocumentCounts,
    chunk_texts,
    retract_document_extraction,
    write_document_extraction,
)
from pipelines.write.ontology import ENTITY_KINDS


@dataclass
class ExtractionReport:
    documents: dict[str, DocumentCounts] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(int(getattr(counts, name)) for counts in self.documents.values())


def extract_documents(
    database: Database,
    extractor: Extractor,
    document_ids: Sequence[str],
    merge_similarity: float,
    progress: Callable[[str], None] = lambda message: None,
) -> ExtractionReport:
    report = ExtractionReport()
    document_ids = list(dict.fromkeys(document_ids))
    with database.connection() as connection:
        documents = {row[0]: row for row in connection.execute(q.DOCUMENTS, {"document_ids": document_ids})}
        chunks = chunk_texts(connection.execute(q.DOCUMENT_CHUNKS, {"document_ids": document_ids}))
        connection.execute(
            q.REGISTER_ENTITY_KINDS, {"names": list(ENTITY_KINDS), "descriptions": list(ENTITY_KINDS.values())}
        )
    report.missing = sorted(set(document_ids) - set(documents))
    live = [d for d in document_ids if d in documents and not documents[d][2] and chunks.get(d)]
    ordered_chunks = [chunk for document_id in live for chunk in chunks[document_id]]
    progress(f"extracting {len(ordered_chunks)} chunks of {len(live)} documents")
    extractions = iter(extractor.extract(ordered_chunks))
    for document_id in document_ids:
        if document_id not in documents:
            continue
        with database.connection() as connection, connection.transaction():
            if document_id in live:
                document_extractions = [next(extractions) for _ in chunks[document_id]]
                report.documents[document_id] = write_document_extraction(
                    connection, document_id, list(documents[document_id][1]), document_extractions, merge_similarity
                )
            else:
                report.documents[document_id] = retract_document_extraction(connection, document_id)
    return report
