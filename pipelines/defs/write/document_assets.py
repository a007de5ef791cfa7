"""The per-document assets (group "documents"): documents, chunks, chunk_embeddings, bm25_index.

Partitioned by source file (`document_partitions`), with a single-run backfill policy: a backfill
over thousands of partitions is one run whose steps process every partition key in batches. Tunables
are run config whose defaults come from lanes.yaml when the run starts (`run_config.py`).
"""

from typing import Any

import dagster as dg

from pipelines.defs.write.partition_metadata import partitioned_result
from pipelines.defs.write.run_config import lanes_yaml_default
from pipelines.orchestration.groups import PER_DOCUMENT_GROUP
from pipelines.orchestration.partitions import document_partitions
from pipelines.resources.database import DatabaseResource
from pipelines.resources.embedder import EmbedderResource
from pipelines.write.documents.bm25 import index_partitions, statistics_consistent, statistics_health
from pipelines.write.documents.chunks import materialize_chunks
from pipelines.write.documents.documents import materialize_documents
from pipelines.write.documents.embeddings import embedding_health, materialize_embeddings

MAX_LOGGED_PROBLEMS = 20
# Any: `dg.asset` is overloaded per keyword, and a dict of mixed values matches no overload.
PER_DOCUMENT: dict[str, Any] = {
    "partitions_def": document_partitions,
    "backfill_policy": dg.BackfillPolicy.single_run(),
    "group_name": PER_DOCUMENT_GROUP,
    "kinds": {"postgres"},
}


class DocumentsConfig(dg.Config):
    max_bytes: int = lanes_yaml_default(lambda pipeline: pipeline.documents.max_bytes)
    batch_size: int = lanes_yaml_default(lambda pipeline: pipeline.documents.batch_size)


class ChunksConfig(dg.Config):
    max_tokens: int = lanes_yaml_default(lambda pipeline: pipeline.chunking.max_tokens)
    overlap_tokens: int = lanes_yaml_default(lambda pipeline: pipeline.chunking.overlap_tokens)
    batch_size: int = lanes_yaml_default(lambda pipeline: pipeline.documents.batch_size)


class BatchConfig(dg.Config):
    batch_size: int = lanes_yaml_default(lambda pipeline: pipeline.documents.batch_size)


@dg.asset(
    **PER_DOCUMENT,
    description=(
        "Documents of each registered source file (markdown, text, JSONL): unchanged ones are left "
        "alone, changed ones replaced, vanished ones retracted with their chunks deleted and facts "
        "closed. Unreadable input is skipped with its reason."
    ),
)
def documents(
    context: dg.AssetExecutionContext, config: DocumentsConfig, database: DatabaseResource
) -> dg.MaterializeResult:
    report = materialize_documents(
        database.get_database(),
        context.partition_keys,
        max_bytes=config.max_bytes,
        batch_size=config.batch_size,
        log=context.log.info,
    )
    for problem in report.problems[:MAX_LOGGED_PROBLEMS]:
        context.log.warning(f"skipped {problem}")
    if len(report.problems) > MAX_LOGGED_PROBLEMS:
        context.log.warning(f"... {len(report.problems) - MAX_LOGGED_PROBLEMS} more skipped; see the metadata")
    return partitioned_result(context, report)


@dg.asset(
    **PER_DOCUMENT,
    deps=[documents],
    description=(
        "Token-aware chunks of each live document, ending at sentence boundaries and overlapping by "
        "whole sentences; ids are `<document id>#<position>`."
    ),
)
def chunks(
    context: dg.AssetExecutionContext, config: ChunksConfig, database: DatabaseResource
) -> dg.MaterializeResult:
    report = materialize_chunks(
        database.get_database(),
        context.partition_keys,
        max_tokens=config.max_tokens,
        overlap_tokens=config.overlap_tokens,
        batch_size=config.batch_size,
        log=context.log.info,
    )
    return partitioned_result(context, report)


@dg.asset(
    **PER_DOCUMENT,
    deps=[chunks],
    description=(
        "An embedding of every chunk (title + text) from the configured model; only missing or stale "
        "embeddings are computed, so a model change followed by a backfill re-embeds everything."
    ),
)
def chunk_embeddings(
    context: dg.AssetExecutionContext,
    config: BatchConfig,
    database: DatabaseResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    report = materialize_embeddings(
        database.get_database(),
        context.partition_keys,
        embedder.get_embedder(),
        batch_size=config.batch_size,
        log=context.log.info,
    )
    return partitioned_result(context, report)


@dg.asset(
    **PER_DOCUMENT,
    deps=[chunks],
    description=(
        "Okapi BM25 term statistics in SQL: postings (PostgreSQL English lexemes and their "
        "frequencies) per chunk, chunk lengths, document frequencies and corpus size. The chunks "
        "step indexes what it writes in the same transaction; this step indexes any chunk still "
        "without postings."
    ),
)
def bm25_index(
    context: dg.AssetExecutionContext, config: BatchConfig, database: DatabaseResource
) -> dg.MaterializeResult:
    report = index_partitions(
        database.get_database(), context.partition_keys, batch_size=config.batch_size, log=context.log.info
    )
    return partitioned_result(context, report)


@dg.asset_check(
    asset=chunk_embeddings,
    description=(
        "Every chunk has an embedding of the configured width, from the configured model, of its current text."
    ),
)
def every_chunk_embedded(database: DatabaseResource, embedder: EmbedderResource) -> dg.AssetCheckResult:
    model = embedder.get_embedder()
    with database.connection() as connection:
        health = embedding_health(connection, model=model.model_id, dimension=model.dimension)
    passed = health["missing"] == 0 and health["wrong_width"] == 0 and health["stale"] == 0
    metadata: dict[str, int | str] = {**health, "model": model.model_id, "dimension": model.dimension}
    return dg.AssetCheckResult(passed=passed, metadata=metadata)


@dg.asset_check(
    asset=bm25_index,
    description=(
        "BM25 statistics agree with the chunk table: every chunk indexed, lengths = sum of term "
        "frequencies, document frequency = postings per term, N and average length exact, every "
        "posting within its term's impact bounds."
    ),
)
def bm25_statistics_match_chunks(database: DatabaseResource) -> dg.AssetCheckResult:
    with database.connection() as connection:
        health = statistics_health(connection)
    return dg.AssetCheckResult(passed=statistics_consistent(health), metadata=health)
