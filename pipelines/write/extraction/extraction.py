"""The entities_and_facts step for a batch of documents: read chunks, extract, write each document.

Extraction (the slow part) runs outside any transaction, a batch of documents at a time; each
document is then written in its own transaction, so one bad document never leaves another
half-written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pipelines.resources.database import Database
from pipelines.write.extraction.extractor import Extractor
from pipelines.write.extraction import extraction_sql as q
from pipelines.write.extraction.extraction_store import (
    DocumentCounts,
    chunk_texts,
    retract_document_extraction,
    write_document_extraction,
)
from pipelines.write.extraction.ontology import ENTITY_KINDS
from pipelines.write.progress import Log, step_progress

STEP = "entities_and_facts"
# Documents extracted and written per round; bounds memory during a backfill of the whole corpus.
DOCUMENTS_PER_BATCH = 200


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
    progress: Log = lambda message: None,
    batch_size: int = DOCUMENTS_PER_BATCH,
) -> ExtractionReport:
    """Extract and write the documents a batch at a time, so a backfill of the whole corpus holds
    one batch in memory and shows progress as it goes."""
    report = ExtractionReport()
    document_ids = list(dict.fromkeys(document_ids))
    with database.connection() as connection:
        connection.execute(
            q.REGISTER_ENTITY_KINDS, {"names": list(ENTITY_KINDS), "descriptions": list(ENTITY_KINDS.values())}
        )
    advance = step_progress(STEP, len(document_ids), "documents", progress)
    for start in range(0, len(document_ids), batch_size):
        _extract_batch(database, extractor, document_ids[start : start + batch_size], merge_similarity, report)
        advance(min(start + batch_size, len(document_ids)))
    return report


def _extract_batch(
    database: Database, extractor: Extractor, document_ids: list[str], merge_similarity: float, report: ExtractionReport
) -> None:
    with database.connection() as connection:
        documents = {row[0]: row for row in connection.execute(q.DOCUMENTS, {"document_ids": document_ids})}
        chunks = chunk_texts(connection.execute(q.DOCUMENT_CHUNKS, {"document_ids": document_ids}))
    report.missing += sorted(set(document_ids) - set(documents))
    live = [d for d in document_ids if d in documents and not documents[d][2] and chunks.get(d)]
    extractions = iter(extractor.extract([chunk for document_id in live for chunk in chunks[document_id]]))
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
