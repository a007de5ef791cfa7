"""BM25 statistics: postings, chunk lengths, document frequencies and corpus size for Okapi BM25.

The chunks step indexes every chunk it writes in the same transaction, so a chunk never exists
without its postings and a chunk that cannot be indexed (the database refuses its values) is not
written either. The bm25_index step indexes whatever chunk still lacks postings (a database from
before, a chunk written by other means), so it repairs without a human and normally finds nothing.

Postings are written per chunk; document frequencies change by the number of postings added or
removed per term, applied under one advisory lock together with the corpus totals, so concurrent
partitions never leave N and the average length behind. That lock is the last one a transaction
takes, so it closes no lock cycle. Code that deletes or rewrites chunks calls `forget_chunks` before
(a cascade would drop postings without correcting the frequencies) and `apply_statistics` with its
result as the last statement of the same transaction.

Document frequencies and corpus totals are kept per scope set of the chunks they count, each row
carrying that set, so row security shows a caller exactly the statistics of the chunks it may read
(sql_templates/schema/0041_bm25_statistics_per_scope.sql).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import psycopg

from pipelines.resources.database import Database
from pipelines.write.documents import bm25_sql as q
from pipelines.write.documents.document_sql import CHUNK_TEXTS, PARTITION_CHUNK_COUNTS
from pipelines.write.batches import BatchWriter
from pipelines.write.documents.chunking import indexed_text
from pipelines.write.progress import Log, step_progress
from pipelines.write.report import StepReport
from pipelines.resources.rows import named_row, one_row

STEP = "bm25_index"
# (term, scope set as its array text, amount, largest term frequency, shortest chunk): the rows
# INDEX_CHUNKS and FORGET_CHUNKS return; a removal (negative amount) carries no bounds.
DocumentFrequencyChange = tuple[str, str, int, int | None, int | None]


def index_partitions(
    database: Database, keys: Sequence[str], *, batch_size: int, log: Log = lambda message: None
) -> StepReport:
    """Index every chunk of the partitions' documents that has no postings yet."""
    report = StepReport(unit="chunks", preview_columns=("chunk", "length", "terms"))
    with database.connection() as connection:
        source_of = dict(connection.execute(q.UNINDEXED_CHUNKS, {"keys": list(keys)}).fetchall())
        in_partitions = dict(connection.execute(PARTITION_CHUNK_COUNTS, {"keys": list(keys)}).fetchall())
    chunks = list(source_of)
    writer = BatchWriter(
        database,
        _index_batch,
        batch_size=batch_size,
        report=report,
        describe=lambda chunk: f"chunk {chunk[0]}",
        partition=lambda chunk: source_of[chunk[0]],
        counts=lambda chunk: {"inserted": 1},
        on_flush=step_progress(STEP, len(chunks), "chunks", log),
    )
    for start in range(0, len(chunks), batch_size):
        with database.connection() as connection:
            texts = connection.execute(CHUNK_TEXTS, {"ids": chunks[start : start + batch_size]}).fetchall()
        for chunk_id, title, text in texts:
            writer.add((chunk_id, indexed_text(title, text)))
    writer.flush()
    report.processed = len(chunks)
    unindexed_per_source = Counter(source_of.values())
    for source_key, chunk_count in in_partitions.items():
        report.count(source_key, {"unchanged": chunk_count - unindexed_per_source[source_key]})
    with database.connection() as connection:
        report.rows = one_row(connection.execute(q.INDEXED_COUNT), "the indexed chunk count")[0]
        report.preview_rows = connection.execute(q.INDEX_PREVIEW, {"chunk_ids": chunks[:5]}).fetchall()
    return report.finish()


def _index_batch(connection: psycopg.Connection, chunks: Sequence[tuple[str, str]]) -> None:
    apply_statistics(connection, index_chunks(connection, chunks))


def index_chunks(connection: psycopg.Connection, chunks: Sequence[tuple[str, str]]) -> list[DocumentFrequencyChange]:
    """Write the postings and lengths of (chunk id, indexed text) pairs; returns the document-frequency
    changes, which the caller passes to `apply_statistics` at the end of the same transaction."""
    if not chunks:
        return []
    return connection.execute(
        q.INDEX_CHUNKS,
        {
            "chunk_ids": [chunk_id for chunk_id, _ in chunks],
            "indexed_texts": [text for _, text in chunks],
            "text_search_config": q.TEXT_SEARCH_CONFIG,
        },
    ).fetchall()


def forget_chunks(connection: psycopg.Connection, chunk_ids: Sequence[str]) -> list[DocumentFrequencyChange]:
    """Remove chunks' postings and lengths; returns the document-frequency changes, which the caller
    passes to `apply_statistics` at the end of the same transaction."""
    if not chunk_ids:
        return []
    return connection.execute(q.FORGET_CHUNKS, {"chunk_ids": list(chunk_ids)}).fetchall()


def apply_statistics(connection: psycopg.Connection, changes: Iterable[DocumentFrequencyChange]) -> None:
    """Apply per-(term, scope set) document-frequency changes (and widen the impact bounds of raised
    ones) and refresh each scope set's N and total length."""
    # Sorted by (term, scope set, amount): a removal's bounds are None, never compared.
    changes = sorted(changes, key=lambda change: change[:3])
    connection.execute(q.LOCK_STATISTICS)
    raised = [change for change in changes if change[2] > 0]
    lowered = [change for change in changes if change[2] < 0]
    if raised:
        terms, scopes, amounts, max_term_frequencies, min_chunk_lengths = (
            list(column) for column in zip(*raised, strict=True)
        )
        connection.execute(
            q.RAISE_DOCUMENT_FREQUENCIES,
            {
                "terms": terms, "scopes": scopes, "amounts": amounts,
                "max_term_frequencies": max_term_frequencies, "min_chunk_lengths": min_chunk_lengths,
            },
        )
    if lowered:
        terms, scopes, amounts = (list(column) for column in zip(*(change[:3] for change in lowered), strict=True))
        connection.execute(q.LOWER_DOCUMENT_FREQUENCIES, {"terms": terms, "scopes": scopes, "amounts": amounts})
        connection.execute(q.DROP_UNUSED_TERMS, {"terms": sorted({change[0] for change in lowered})})
    connection.execute(q.REFRESH_CORPUS)


def statistics_health(connection: psycopg.Connection) -> dict[str, float]:
    """The BM25 statistics recomputed from the tables beside what is stored; see `STATISTICS_HEALTH`."""
    health = named_row(connection.execute(q.STATISTICS_HEALTH), "the BM25 statistics")
    return {name: float(value) for name, value in health.items()}


def statistics_consistent(health: dict[str, float], tolerance: float = 1e-9) -> bool:
    return (
        health["unindexed_chunks"] == 0
        and health["wrong_lengths"] == 0
        and health["postings_without_length"] == 0
        and health["wrong_scopes"] == 0
        and health["wrong_document_frequencies"] == 0
        and health["broken_impact_bounds"] == 0
        and health["wrong_corpus_rows"] == 0
        and health["stored_chunk_count"] == health["indexed_chunks"] == health["chunks"]
        and abs(health["stored_average_length"] - health["average_length"]) <= tolerance
    )
