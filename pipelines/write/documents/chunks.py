"""The chunks step: cut each live document of the partitions into chunks and store the difference.

A document is chunked again only when its content or the chunking settings changed (its
`chunked_with` fingerprint). Chunk ids are `<document id>#<position>`, so the same corpus gets the
same ids in every database; a chunk whose text changed keeps its id and loses its embedding, which
the embeddings step computes again. BM25 postings are rewritten in the transaction that writes the
chunks: the statistics never describe chunks that are not there, nor miss chunks that are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg

from pipelines.resources.database import Database
from pipelines.write.documents import document_sql as q
from pipelines.write.batches import BatchWriter
from pipelines.write.documents.bm25 import apply_statistics, forget_chunks, index_chunks
from pipelines.write.documents.chunking import Chunk, chunk_document, chunk_hash, chunking_fingerprint, indexed_text
from pipelines.write.progress import Log, step_progress
from pipelines.write.report import StepReport
from pipelines.resources.rows import one_row

STEP = "chunks"


def chunk_id(document_id: str, position: int) -> str:
    return f"{document_id}#{position}"


@dataclass
class _DocumentChunks:
    document_id: str
    source_key: str
    fingerprint: str
    title: str
    inserts: list[dict] = field(default_factory=list)
    updates: list[dict] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    unchanged: int = 0


def materialize_chunks(
    database: Database,
    keys: Sequence[str],
    *,
    max_tokens: int,
    overlap_tokens: int,
    batch_size: int,
    log: Log = lambda message: None,
) -> StepReport:
    report = StepReport(unit="documents", preview_columns=("chunk", "tokens", "text"))
    with database.connection() as connection:
        states = connection.execute(q.CHUNKING_STATES, {"keys": list(keys)}).fetchall()
    source_of = {document_id: source_key for document_id, source_key, _, _ in states}
    stale = {
        document_id: fingerprint
        for document_id, _, content_hash, chunked_with in states
        if (fingerprint := chunking_fingerprint(content_hash, max_tokens, overlap_tokens)) != chunked_with
    }
    current = [document_id for document_id in source_of if document_id not in stale]
    writer = BatchWriter(
        database,
        _write_chunks,
        batch_size=batch_size,
        report=report,
        describe=lambda plan: f"document {plan.document_id}",
        partition=lambda plan: plan.source_key,
        counts=_counts,
        on_flush=step_progress(STEP, len(stale), "documents", log),
    )
    ids = sorted(stale)
    for start in range(0, len(ids), batch_size):
        group = ids[start : start + batch_size]
        with database.connection() as connection:
            documents = connection.execute(q.DOCUMENTS_TO_CHUNK, {"ids": group}).fetchall()
            existing = connection.execute(q.EXISTING_CHUNKS, {"ids": group}).fetchall()
        stored: dict[str, dict[str, tuple[str, list[str]]]] = {}
        for stored_id, document_id, content_hash, scopes in existing:
            stored.setdefault(document_id, {})[stored_id] = (content_hash, scopes)
        for document_id, title, body, _, scopes in documents:
            chunks = chunk_document(title, body, max_tokens=max_tokens, overlap_tokens=overlap_tokens)
            writer.add(_plan(
                document_id, source_of[document_id], stale[document_id], title, scopes, chunks,
                stored.get(document_id, {}),
            ))
    writer.flush()
    report.processed = len(stale)
    with database.connection() as connection:
        for source_key, chunk_count in connection.execute(q.DOCUMENT_CHUNK_COUNTS, {"ids": current}):
            report.count(source_key, {"unchanged": chunk_count})
        report.rows = one_row(connection.execute(q.CHUNK_COUNT), "the chunk count")[0]
        report.preview_rows = connection.execute(q.CHUNK_PREVIEW, {"ids": ids[:5] or current[:5]}).fetchall()
    return report.finish()


def _plan(
    document_id: str,
    source_key: str,
    fingerprint: str,
    title: str,
    scopes: list[str],
    chunks: Sequence[Chunk],
    stored: dict[str, tuple[str, list[str]]],
) -> _DocumentChunks:
    """The inserts, updates and deletes that turn the stored chunks into `chunks`."""
    plan = _DocumentChunks(document_id, source_key, fingerprint, title)
    wanted = set()
    for chunk in chunks:
        identifier = chunk_id(document_id, chunk.position)
        row = {
            "id": identifier,
            "document_id": document_id,
            "position": chunk.position,
            "text": chunk.text,
            "token_count": chunk.token_count,
            "content_hash": chunk_hash(title, chunk.text),
            "scopes": list(scopes),
        }
        wanted.add(identifier)
        previous = stored.get(identifier)
        if previous is None:
            plan.inserts.append(row)
        elif previous != (row["content_hash"], row["scopes"]):
            plan.updates.append(row)
        else:
            plan.unchanged += 1
    plan.deletes = sorted(set(stored) - wanted)
    return plan


def _counts(plan: _DocumentChunks) -> dict[str, int]:
    return {
        "inserted": len(plan.inserts),
        "updated": len(plan.updates),
        "deleted": len(plan.deletes),
        "unchanged": plan.unchanged,
    }


def _write_chunks(connection: psycopg.Connection, plans: Sequence[_DocumentChunks]) -> None:
    inserts = [row for plan in plans for row in plan.inserts]
    updates = [row for plan in plans for row in plan.updates]
    deletes = [chunk for plan in plans for chunk in plan.deletes]
    # Rewritten and removed chunks leave BM25 first; written ones are indexed after they are stored.
    forgotten = [row["id"] for row in updates] + deletes
    changes = forget_chunks(connection, forgotten)
    cursor = connection.cursor()
    if deletes:
        cursor.execute(q.DELETE_CHUNKS, {"ids": deletes})
    if updates:
        cursor.executemany(q.UPDATE_CHUNK, updates)
    if inserts:
        cursor.executemany(q.INSERT_CHUNK, inserts)
    cursor.executemany(
        q.MARK_DOCUMENT_CHUNKED, [{"id": plan.document_id, "fingerprint": plan.fingerprint} for plan in plans]
    )
    written = [(row["id"], indexed_text(plan.title, row["text"])) for plan in plans for row in plan.inserts + plan.updates]
    changes += index_chunks(connection, written)
    if forgotten or written:
        apply_statistics(connection, changes)
