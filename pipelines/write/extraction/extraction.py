"""The entities_and_facts step for a batch of documents: read chunks, extract, write each document.

Extraction (the slow part) runs outside any transaction, a batch of documents at a time; each
document is then written in its own transaction, so one bad document never leaves another
half-written.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pipelines.resources.database import Database
from pipelines.write.extraction.extraction_model import ChunkExtraction
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
    two batches in memory and shows progress as it goes. The next batch is extracted while this one
    is written: the writes wait on the database, the extraction on the CPU."""
    report = ExtractionReport()
    document_ids = list(dict.fromkeys(document_ids))
    with database.connection() as connection:
        connection.execute(
            q.REGISTER_ENTITY_KINDS, {"names": list(ENTITY_KINDS), "descriptions": list(ENTITY_KINDS.values())}
        )
    advance = step_progress(STEP, len(document_ids), "documents", progress)
    batches = [document_ids[start : start + batch_size] for start in range(0, len(document_ids), batch_size)]
    written = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=STEP) as ahead:
        upcoming = [ahead.submit(_extract_batch, database, extractor, batch) for batch in batches[:1]]
        for index in range(len(batches)):
            extracted = upcoming.pop().result()
            if index + 1 < len(batches):
                upcoming.append(ahead.submit(_extract_batch, database, extractor, batches[index + 1]))
            _write_batch(database, extracted, merge_similarity, report)
            written += len(extracted.document_ids)
            advance(written)
    return report


@dataclass
class _ExtractedBatch:
    document_ids: list[str]
    # document id -> (id, scopes, retracted)
    documents: dict[str, tuple]
    # Extractions of the live documents, each document's in the order of its chunks.
    extractions: dict[str, list[ChunkExtraction]]


def _extract_batch(database: Database, extractor: Extractor, document_ids: list[str]) -> _ExtractedBatch:
    with database.connection() as connection:
        documents = {row[0]: row for row in connection.execute(q.DOCUMENTS, {"document_ids": document_ids})}
        chunks = chunk_texts(connection.execute(q.DOCUMENT_CHUNKS, {"document_ids": document_ids}))
    live = [d for d in document_ids if d in documents and not documents[d][2] and chunks.get(d)]
    extractions = iter(extractor.extract([chunk for document_id in live for chunk in chunks[document_id]]))
    return _ExtractedBatch(
        document_ids,
        documents,
        {document_id: [next(extractions) for _ in chunks[document_id]] for document_id in live},
    )


def _write_batch(database: Database, batch: _ExtractedBatch, merge_similarity: float, report: ExtractionReport) -> None:
    report.missing += sorted(set(batch.document_ids) - set(batch.documents))
    for document_id in batch.document_ids:
        if document_id not in batch.documents:
            continue
        with database.connection() as connection, connection.transaction():
            if document_id in batch.extractions:
                report.documents[document_id] = write_document_extraction(
                    connection, document_id, list(batch.documents[document_id][1]),
                    batch.extractions[document_id], merge_similarity,
                )
            else:
                report.documents[document_id] = retract_document_extraction(connection, document_id)
