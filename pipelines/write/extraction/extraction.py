"""The entities_and_facts step for a batch of documents: read chunks, extract, stage, merge.

Extraction (the slow part) and staging run outside any transaction and hold no lock, a batch of
documents at a time; each batch is then merged into the graph in one transaction, one round trip,
under the graph write lock, so nothing is ever half-written and a killed run leaves nothing staged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

from pipelines.resources.database import Database, server_on_this_machine
from pipelines.write.extraction.extractor import Extractor, ParsesInWorkers
from pipelines.write.extraction import extraction_sql as q
from pipelines.write.extraction.extraction_store import (
    DocumentCounts,
    StagedDocument,
    chunk_texts,
    merge_documents,
    stage_document,
    stage_retraction,
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
    # Seconds spent extracting (the parse, in the thread ahead of the writes), copying staged rows,
    # resolving their names against the committed graph, waiting for the graph write lock, merging
    # under it (until the batch committed), and moving the new names into the trigram index after
    # the commit; two reports of the same writes are equal however long they took.
    extract_seconds: float = field(default=0.0, compare=False)
    stage_seconds: float = field(default=0.0, compare=False)
    resolve_ahead_seconds: float = field(default=0.0, compare=False)
    lock_wait_seconds: float = field(default=0.0, compare=False)
    merge_seconds: float = field(default=0.0, compare=False)
    name_index_seconds: float = field(default=0.0, compare=False)

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
    """Extract and merge the documents a batch at a time, so a backfill of the whole corpus holds
    two batches in memory and shows progress as it goes. The next batch is extracted and staged
    while this one is merged: the merge waits on the database, the extraction on the CPU. Only the
    merge holds the graph write lock, so another run's extraction goes on beside it. While a server
    on this machine merges a batch, the parse runs one worker fewer, so that the merge, which every
    other writer waits on, has a core to itself."""
    report = ExtractionReport()
    document_ids = list(dict.fromkeys(document_ids))
    with database.connection() as connection:
        connection.execute(
            q.REGISTER_ENTITY_KINDS, {"names": list(ENTITY_KINDS), "descriptions": list(ENTITY_KINDS.values())}
        )
    advance = step_progress(STEP, len(document_ids), "documents", progress)
    batches = [document_ids[start : start + batch_size] for start in range(0, len(document_ids), batch_size)]
    written = 0
    core_for_the_server = _core_for_the_server(database, extractor)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=STEP) as ahead:
        upcoming = [ahead.submit(_extract_batch, database, extractor, batch) for batch in batches[:1]]
        for index in range(len(batches)):
            extracted = upcoming.pop().result()
            if index + 1 < len(batches):
                upcoming.append(ahead.submit(_extract_batch, database, extractor, batches[index + 1]))
            with core_for_the_server():
                _merge_batch(database, extracted, merge_similarity, report)
            written += len(extracted.document_ids)
            advance(written)
    return report


def _core_for_the_server(database: Database, extractor: Extractor) -> Callable[[], AbstractContextManager[None]]:
    """What each merge runs inside: one parse worker fewer when the server shares this machine's
    cores and the extractor parses in workers, else nothing. Decided once a run."""
    if server_on_this_machine(database.url) and isinstance(extractor, ParsesInWorkers):
        return extractor.one_worker_fewer
    return nullcontext


@dataclass
class _ExtractedBatch:
    document_ids: list[str]
    missing: list[str]
    # Every document found, in the batch's order: its extraction staged, or its retraction.
    staged: list[StagedDocument]
    extract_seconds: float


def _extract_batch(database: Database, extractor: Extractor, document_ids: list[str]) -> _ExtractedBatch:
    started = time.perf_counter()
    with database.connection() as connection:
        documents = {row[0]: row for row in connection.execute(q.DOCUMENTS, {"document_ids": document_ids})}
        chunks = chunk_texts(connection.execute(q.DOCUMENT_CHUNKS, {"document_ids": document_ids}))
    live = [d for d in document_ids if d in documents and not documents[d][2] and chunks.get(d)]
    extractions = iter(extractor.extract([chunk for document_id in live for chunk in chunks[document_id]]))
    by_document = {document_id: [next(extractions) for _ in chunks[document_id]] for document_id in live}
    staged = [
        stage_document(document_id, list(documents[document_id][1]), by_document[document_id])
        if document_id in by_document
        else stage_retraction(document_id, list(documents[document_id][1]))
        for document_id in document_ids
        if document_id in documents
    ]
    missing = sorted(set(document_ids) - set(documents))
    return _ExtractedBatch(document_ids, missing, staged, time.perf_counter() - started)


def _merge_batch(database: Database, batch: _ExtractedBatch, merge_similarity: float, report: ExtractionReport) -> None:
    report.missing += batch.missing
    report.extract_seconds += batch.extract_seconds
    if not batch.staged:
        return
    with database.connection() as connection:
        with connection.transaction():
            counts, timing = merge_documents(connection, batch.staged, merge_similarity)
        committed = time.perf_counter()
        connection.execute(q.INDEX_PENDING_ENTITY_NAMES)
        report.name_index_seconds += time.perf_counter() - committed
    report.documents.update(counts)
    report.stage_seconds += timing.stage_seconds
    report.resolve_ahead_seconds += timing.resolve_ahead_seconds
    report.lock_wait_seconds += timing.lock_wait_seconds
    # The lock is held until the commit, so the commit is merge time too.
    report.merge_seconds += committed - timing.locked_at
