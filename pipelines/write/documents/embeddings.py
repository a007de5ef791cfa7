"""The chunk_embeddings step: embed, in batches, the chunks whose embedding is missing or stale.

Stale means made by another model (`embedding_model`) or from older text (`embedded_hash` differs
from `content_hash`), so changing the model in lanes.yaml and materializing every partition again
(a backfill) re-embeds the corpus; nothing else needs to run.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

from pipelines.resources.database import Database
from pipelines.resources.embedder import Embedder, EmbeddingError
from pipelines.write.documents import document_sql as q
from pipelines.write.batches import BatchWriter
from pipelines.write.documents.chunking import indexed_text
from pipelines.write.progress import Log, embed_showing_progress, step_progress
from pipelines.write.report import StepReport
from pipelines.resources.rows import named_row, one_row

STEP = "chunk_embeddings"


@dataclass(frozen=True)
class _Embedded:
    chunk_id: str
    source_key: str
    content_hash: str
    missing: bool
    vector: np.ndarray
    model: str


def materialize_embeddings(
    database: Database,
    keys: Sequence[str],
    embedder: Embedder,
    *,
    batch_size: int,
    log: Log = lambda message: None,
) -> StepReport:
    report = StepReport(unit="chunks", preview_columns=("chunk", "model", "dimensions", "text"))
    with database.connection() as connection:
        stale = connection.execute(q.STALE_EMBEDDINGS, {"keys": list(keys), "model": embedder.model_id}).fetchall()
        in_partitions = dict(connection.execute(q.PARTITION_CHUNK_COUNTS, {"keys": list(keys)}).fetchall())
    writer = BatchWriter(
        database,
        _write_embeddings,
        batch_size=batch_size,
        report=report,
        describe=lambda item: f"chunk {item.chunk_id}",
        partition=lambda item: item.source_key,
        counts=lambda item: {"inserted": 1} if item.missing else {"updated": 1},
    )
    advance = step_progress(STEP, len(stale), "chunks embedded", log)
    model_seconds = 0.0
    for start in range(0, len(stale), batch_size):
        group = {
            chunk_id: (content_hash, missing, source_key)
            for chunk_id, content_hash, missing, source_key in stale[start : start + batch_size]
        }
        with database.connection() as connection:
            texts = connection.execute(q.CHUNK_TEXTS, {"ids": list(group)}).fetchall()
        started = time.perf_counter()
        vectors = embed_showing_progress(
            embedder.embed, [indexed_text(title, text) for _, title, text in texts], advance, done_before=start
        )
        model_seconds += time.perf_counter() - started
        if vectors.shape != (len(texts), embedder.dimension):
            raise EmbeddingError(
                f"{embedder.model_id} returned vectors of shape {vectors.shape} for {len(texts)} "
                f"chunks; pipeline.embedding.dimension is {embedder.dimension}"
            )
        for (chunk_id, _, _), vector in zip(texts, vectors, strict=True):
            content_hash, missing, source_key = group[chunk_id]
            writer.add(_Embedded(chunk_id, source_key, content_hash, missing, vector, embedder.model_id))
    writer.flush()
    stale_per_source = Counter(source_key for *_, source_key in stale)
    for source_key, chunk_count in in_partitions.items():
        report.count(source_key, {"unchanged": chunk_count - stale_per_source[source_key]})
    report.processed = len(stale)
    report.details = {
        "model": embedder.model_id,
        "dimension": embedder.dimension,
        "model_seconds": round(model_seconds, 3),
        "model_chunks_per_second": round(len(stale) / model_seconds, 1) if model_seconds else 0.0,
    }
    with database.connection() as connection:
        report.rows = one_row(connection.execute(q.EMBEDDED_COUNT), "the embedded chunk count")[0]
        report.preview_rows = connection.execute(
            q.EMBEDDING_PREVIEW, {"ids": [row[0] for row in stale[:5]]}
        ).fetchall()
    return report.finish()


def _write_embeddings(connection: psycopg.Connection, items: Sequence[_Embedded]) -> None:
    cursor = connection.cursor()
    cursor.executemany(
        q.WRITE_EMBEDDING,
        [
            {"id": item.chunk_id, "content_hash": item.content_hash, "embedding": item.vector, "model": item.model}
            for item in items
        ],
    )


def embedding_health(connection: psycopg.Connection, *, model: str, dimension: int) -> dict[str, int]:
    """Chunks in all, and how many lack an embedding, have another width, or are stale."""
    return named_row(connection.execute(q.EMBEDDING_HEALTH, {"model": model, "dimension": dimension}), "the embeddings' health")
