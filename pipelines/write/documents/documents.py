"""The documents step: read each registered source and bring its documents up to date.

A document whose content hash is unchanged is left alone; a changed one is replaced (its chunks are
rewritten by the chunks step, which sees the new content hash); a document that is no longer in its
source is retracted: `retracted_at` set, its chunks deleted (and taken out of BM25), its facts closed
with `recorded_to`. Input that cannot be read is skipped with a reason and the rest still lands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pipelines.resources.database import Database
from pipelines.write.documents import document_sql as q
from pipelines.write.batches import BatchWriter
from pipelines.write.documents.bm25 import apply_statistics, forget_chunks
from pipelines.write.progress import Log, step_progress
from pipelines.write.report import StepReport
from pipelines.write.documents.sources import SourceDocument, SourceFile, read_source
from pipelines.resources.rows import one_row

STEP = "documents"


@dataclass(frozen=True)
class _Upsert:
    key: str
    document: SourceDocument
    change: str  # "inserted" or "updated"


@dataclass(frozen=True)
class _Retract:
    key: str
    document_id: str


def materialize_documents(
    database: Database,
    keys: Sequence[str],
    *,
    max_bytes: int,
    batch_size: int,
    log: Log = lambda message: None,
) -> StepReport:
    report = StepReport(unit="sources", preview_columns=("id", "title", "characters", "scopes", "updated"))
    with database.connection() as connection:
        sources = {
            key: SourceFile(key, Path(path), kind)
            for key, path, kind in connection.execute(q.SOURCES, {"keys": list(keys)})
        }
    for key in keys:
        if key not in sources:
            report.skip(key, "not a registered source; run `lanegraph ingest` on its folder or file", key)
    advance = step_progress(STEP, len(sources), "sources", log)
    writer = BatchWriter(
        database,
        _write_documents,
        batch_size=batch_size,
        report=report,
        describe=_describe,
        partition=lambda item: item.key,
        counts=_counts,
    )
    read_hashes: dict[str, str | None] = {}
    for done, key in enumerate(sorted(sources), start=1):
        read = read_source(sources[key], max_bytes)
        for problem in read.problems:
            report.skip(problem.location, problem.reason, key)
        read_hashes[key] = read.file_hash
        # An unreadable copy (binary, oversized, ...) leaves the documents it held as they were.
        if not read.unreadable:
            _plan_source(database, key, read.documents, writer, report)
        advance(done)
    writer.flush()
    incomplete = {item.key for item in writer.failed}
    with database.connection() as connection:
        connection.cursor().executemany(
            q.MARK_SOURCE_MATERIALIZED,
            [{"key": key, "file_hash": h} for key, h in read_hashes.items() if key not in incomplete],
        )
        report.rows = one_row(connection.execute(q.DOCUMENT_COUNT), "the document count")[0]
        report.preview_rows = connection.execute(q.DOCUMENT_PREVIEW, {"keys": sorted(sources)}).fetchall()
    report.processed = len(sources)
    return report.finish()


def _plan_source(
    database: Database,
    key: str,
    documents: Sequence[SourceDocument],
    writer: BatchWriter,
    report: StepReport,
) -> None:
    """Queue the inserts, updates and retractions that bring one source's documents up to date."""
    with database.connection() as connection:
        stored = {
            document_id: (source_key, content_hash, retracted_at)
            for document_id, source_key, content_hash, retracted_at in connection.execute(
                q.DOCUMENT_STATES, {"keys": [key], "ids": [d.id for d in documents]}
            )
        }
    for document in documents:
        state = stored.get(document.id)
        if state is None:
            writer.add(_Upsert(key, document, "inserted"))
            continue
        source_key, content_hash, retracted_at = state
        if source_key not in (key, None) and retracted_at is None:
            report.skip(
                f"{key} ({document.id})",
                f"document id {document.id!r} already comes from source {source_key!r}",
                key,
            )
        elif source_key == key and content_hash == document.content_hash and retracted_at is None:
            report.count(key, {"unchanged": 1})
        else:
            writer.add(_Upsert(key, document, "updated"))
    present = {document.id for document in documents}
    for document_id, (source_key, _, retracted_at) in sorted(stored.items()):
        if source_key == key and retracted_at is None and document_id not in present:
            writer.add(_Retract(key, document_id))


def _describe(item: _Upsert | _Retract) -> str:
    document_id = item.document.id if isinstance(item, _Upsert) else item.document_id
    return f"{item.key} ({document_id})"


def _counts(item: _Upsert | _Retract) -> dict[str, int]:
    return {item.change: 1} if isinstance(item, _Upsert) else {"deleted": 1}


def _write_documents(connection: psycopg.Connection, items: Sequence[_Upsert | _Retract]) -> None:
    upserts = [item for item in items if isinstance(item, _Upsert)]
    retractions = [item.document_id for item in items if isinstance(item, _Retract)]
    if upserts:
        connection.cursor().executemany(q.UPSERT_DOCUMENT, [_document_row(item) for item in upserts])
    retract_documents(connection, retractions)


def _document_row(item: _Upsert) -> dict[str, object]:
    document = item.document
    turn = document.turn
    return {
        "id": document.id,
        "title": document.title,
        "uri": document.uri,
        "body": document.body,
        "content_hash": document.content_hash,
        "observed_at": document.observed_at,
        "expires_at": document.expires_at,
        "scopes": list(document.scopes),
        "source_key": item.key,
        "conversation": turn.conversation if turn else None,
        "session": turn.session if turn else None,
        "speaker": turn.speaker if turn else None,
        "turn": turn.position if turn else None,
    }


def retract_documents(connection: psycopg.Connection, document_ids: Sequence[str]) -> None:
    """Retract documents in the caller's transaction: facts closed, chunks (and their BM25
    statistics) removed, the document row kept with `retracted_at` for the record. Call it last in
    the transaction: it ends with the BM25 statistics lock."""
    if not document_ids:
        return
    ids = list(document_ids)
    connection.execute(q.CLOSE_DOCUMENT_FACTS, {"ids": ids})
    chunk_ids = [chunk_id for (chunk_id,) in connection.execute(q.DOCUMENT_CHUNK_IDS, {"ids": ids})]
    changes = forget_chunks(connection, chunk_ids)
    connection.execute(q.DELETE_DOCUMENT_CHUNKS, {"ids": ids})
    connection.execute(q.RETRACT_DOCUMENTS, {"ids": ids})
    apply_statistics(connection, changes)
