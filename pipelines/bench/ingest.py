"""Ingest throughput on a benchmark corpus: passages per second per asset and end to end, beside the
embedding model's own throughput on the same texts in the same process.

Each passage of an evaluation dataset (the format of ../shared/data, read as `lanegraph eval` reads
it) becomes one document titled with its title, written as one JSONL source into a fresh schema,
and the per-document assets run once through the runner (`pipelines.orchestration.runner.ingest`).
The target is the whole pipeline within twice the time the model alone needs.

Then the rest of the write side (extraction and the graph-wide assets) is built over the same schema,
the full build's time being both parts. Its target is the full build within 3.5 times the
chunk_embeddings step of the same run (`full_build_over_chunk_embeddings`); the graph-wide part
alone is reported against that step too, as is the full build against the model alone. Then one
more passage, held out of the corpus, is ingested as a source of its own through the whole write
side, graph refresh included (incremental, as every ingest into a built graph). The target is that
one-document ingest within 5% of the full build.

    lanegraph bench ingest ../shared/data/musique.json [--limit 1000] [--json OUT]
    lanegraph bench ingest --synthetic 100k [--json OUT]

`--synthetic N` takes the documents of the synthetic corpus `lanegraph bench --chunks N` reads,
each document one passage, instead of a dataset's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from pipelines.bench.ingest_arguments import add_ingest_arguments
from pipelines.bench.loader import drop_schema, recreate_schema
from pipelines.bench.synthetic import CorpusShape, SyntheticCorpus
from pipelines.bench.report import render_ingest
from pipelines.config import load_config
from pipelines.errors import InputError, LanegraphError
from pipelines.evaluation.dataset import Passage, load_dataset, write_corpus_jsonl
from pipelines.resources.database import DatabaseResource, connect, resolve_database_url
from pipelines.resources.embedder import EmbedderResource
from pipelines.write.documents.chunking import indexed_text
from pipelines.write.extraction import extraction_sql
from pipelines.write.extraction.extraction_store import chunk_texts
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.orchestration.runner import WriteReport, ingest, materialize

BENCH_DATABASE = "lanegraph_bench_ingest"
STEPS = ("documents", "chunks", "chunk_embeddings", "bm25_index")
# Built after the per-document steps to complete the full build; the graph-wide ones report the
# rows they recomputed and kept.
REST_OF_BUILD = ("entities_and_facts", "entity_graph", "communities", "entity_profiles", "raptor_levels")
REBUILDING = ("communities", "entity_profiles", "raptor_levels")
# Whether the full build's graph can carry a hop from chunk to chunk, from entity_graph's metadata.
GRAPH_FIGURES = (
    "entities", "relation_facts", "entities_per_chunk", "single_chunk_entity_share", "entity_edges_per_entity",
)
ONE_DOCUMENT_TARGET_SHARE = 0.05
FULL_BUILD_TARGET_OVER_CHUNK_EMBEDDINGS = 3.5
# The extraction step scales with workers only as far as its serial part (the merge, under the
# graph write lock) allows: these bound it, and Amdahl's law turns the share into a speedup.
SERIAL_SHARE_TARGET = 0.10
SERVER_MS_PER_DOCUMENT_TARGET = 2.0
AMDAHL_WORKERS = 8


def benchmark_passages(dataset: Path, limit: int | None) -> tuple[Passage, ...]:
    """The dataset's first `limit` passages: at least two, as the last one is held out."""
    return _at_least_two(str(dataset), load_dataset(dataset).passages[:limit])


def synthetic_passages(chunks: int, limit: int | None) -> tuple[Passage, ...]:
    """The documents of the synthetic corpus `lanegraph bench --chunks N` reads (its default seed: the
    same titles and text), the first `limit` of them, each as one passage. There the rows are
    bulk-loaded around the write side; here the text goes through it, chunked by our own chunker."""
    corpus = SyntheticCorpus(CorpusShape(chunks, load_config().pipeline.embedding.dimension))
    documents = (document for block in corpus.content_blocks() for document in block.documents)
    passages = tuple(
        Passage(id=document_id, title=title, text=body)
        for document_id, title, _, body, *_ in itertools.islice(documents, limit)
    )
    return _at_least_two(f"the synthetic corpus of {chunks:,} chunks", passages)


def _at_least_two(corpus: str, passages: tuple[Passage, ...]) -> tuple[Passage, ...]:
    if len(passages) < 2:
        raise InputError(f"{corpus}: the ingest benchmark needs at least 2 passages (one is held out), got {len(passages)}")
    return passages


def measure_ingest(
    corpus_name: str, all_passages: Sequence[Passage], *, progress: Callable[[str], None] = lambda message: None
) -> dict:
    """Ingest the passages but the last into a fresh schema and time every step; see the module doc."""
    *corpus, held_out = all_passages
    passages = len(corpus)
    warnings.filterwarnings("ignore", module="dagster")
    # Imported once the filter is in place: Dagster warns, as each asset module is defined, that
    # backfill_policy is a beta parameter, which a reader of this benchmark cannot act on.
    from pipelines.defs.write import document_assets, jobs

    settings = load_config().pipeline
    embedder_resource = EmbedderResource.from_settings(settings.embedding)
    definitions = dg.Definitions(
        assets=[document_assets.documents, document_assets.chunks, document_assets.chunk_embeddings, document_assets.bm25_index],
        asset_checks=[document_assets.every_chunk_embedded, document_assets.bm25_statistics_match_chunks],
        jobs=[jobs.ingest_documents],
        resources={"database": DatabaseResource(), "embedder": embedder_resource},
    )
    embedder = embedder_resource.get_embedder()
    # Load the model first, so neither the pipeline nor the model-alone timing pays for it.
    started = time.perf_counter()
    embedder.embed(["warm-up"])
    model_load = time.perf_counter() - started
    server_url = resolve_database_url(BENCH_DATABASE)
    schema = f"bench_ingest_{uuid.uuid4().hex[:8]}"
    url = recreate_schema(server_url, schema, settings.embedding.dimension)
    instance = dg.DagsterInstance.ephemeral()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) / "corpus"
            folder.mkdir()
            write_corpus_jsonl(corpus, folder / "corpus.jsonl")
            progress(f"ingesting {passages} passages of {corpus_name}")
            started = time.perf_counter()
            report = ingest(folder, definitions=definitions, instance=instance, database_url=url)
            end_to_end = time.perf_counter() - started
            with connect(url) as connection:
                texts = [
                    indexed_text(title, text)
                    for title, text in connection.execute(
                        "SELECT document.title, chunk.text FROM chunk JOIN document ON document.id = chunk.document_id ORDER BY chunk.id"
                    )
                ]
            one_document = measure_one_document(folder, held_out, url, instance, end_to_end, progress)
    finally:
        drop_schema(server_url, schema)
    progress(f"embedding the same {len(texts)} chunk texts with the model alone")
    started = time.perf_counter()
    embedder.embed(texts)
    model_alone = time.perf_counter() - started
    chunk_embedding_seconds = _seconds(report, "chunk_embeddings")
    steps = {
        name: {
            "seconds": _seconds(report, name),
            "passages_per_second": round(passages / _seconds(report, name), 1),
            **report.counts(name),
        }
        for name in STEPS
    }
    return {
        "dataset": corpus_name,
        "passages": passages,
        "chunks": len(texts),
        "steps": steps,
        "model_load_seconds": round(model_load, 2),
        # Time inside the model during the chunk_embeddings step; the rest of that step is SQL.
        "pipeline_model_seconds": report.assets["chunk_embeddings"]["model_seconds"],
        "end_to_end_seconds": round(end_to_end, 2),
        "end_to_end_passages_per_second": round(passages / end_to_end, 1),
        "model_alone_seconds": round(model_alone, 2),
        "model_alone_chunks_per_second": round(len(texts) / model_alone, 1),
        "end_to_end_over_model_alone": round(end_to_end / model_alone, 2),
        # Every asset of the full build beside the embedding step on the same chunks.
        "steps_over_chunk_embeddings": {
            name: round(seconds / chunk_embedding_seconds, 2)
            for name, seconds in {
                **{name: report.assets[name]["seconds"] for name in STEPS},
                **one_document["full_build_steps"],
            }.items()
        },
        "full_build_over_chunk_embeddings": round(one_document["full_build_seconds"] / chunk_embedding_seconds, 2),
        "graph_wide_over_chunk_embeddings": round(one_document["graph_wide_seconds"] / chunk_embedding_seconds, 2),
        "full_build_over_model_alone": round(one_document["full_build_seconds"] / model_alone, 2),
        "full_build_target_over_chunk_embeddings": FULL_BUILD_TARGET_OVER_CHUNK_EMBEDDINGS,
        "checks": report.checks,
        "one_document": one_document,
    }


def measure_one_document(
    folder: Path, held_out: Passage, url: str, instance: dg.DagsterInstance, per_document_seconds: float,
    progress: Callable[[str], None],
) -> dict:
    """Complete the full build over the ingested corpus, then ingest `held_out` as a source of its
    own, graph refresh included, and time both (see the module doc)."""
    # Imported here: the whole code location loads the extractor and every other asset's module.
    from pipelines.definitions import defs

    progress("building the rest of the write side (extraction, entity graph, communities, profiles, RAPTOR)")
    started = time.perf_counter()
    built = materialize(list(REST_OF_BUILD), definitions=defs, instance=instance, database_url=url)
    graph_wide = time.perf_counter() - started
    full_build = per_document_seconds + graph_wide
    progress("parsing the same chunks with the extractor alone (the extraction step's floor)")
    parse_alone = measure_parse_alone(url)
    write_corpus_jsonl([held_out], folder / "one-more.jsonl")
    progress(f"ingesting one more passage ({held_out.id}) into the built corpus")
    started = time.perf_counter()
    added = ingest(folder, definitions=defs, instance=instance, database_url=url)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "full_build_seconds": round(full_build, 2),
        "graph_wide_seconds": round(graph_wide, 2),
        "share_of_full_build": round(seconds / full_build, 4),
        "target_share": ONE_DOCUMENT_TARGET_SHARE,
        "full_build_steps": _step_seconds(built, REST_OF_BUILD),
        "graph": {name: built.assets["entity_graph"].get(name) for name in GRAPH_FIGURES},
        "extraction": extraction_figures(built.assets["entities_and_facts"], parse_alone),
        "steps": _step_seconds(added, [*STEPS, *REST_OF_BUILD]),
        "graph_refresh": {
            name: {key: added.assets[name][key] for key in ("mode", "recomputed", "kept", "removed")}
            for name in REBUILDING
        },
        "checks": added.checks,
    }


def measure_parse_alone(url: str) -> dict[str, float]:
    """The configured extractor on every chunk of the corpus, in one call, outside any step: what
    the extraction step would take if writing the graph cost nothing."""
    extractor = ExtractorResource.from_settings(load_config().pipeline.extraction).get_extractor()
    with connect(url) as connection:
        document_ids = [document_id for (document_id,) in connection.execute("SELECT id FROM document ORDER BY id")]
        chunks = chunk_texts(connection.execute(extraction_sql.DOCUMENT_CHUNKS, {"document_ids": document_ids}))
    texts = [chunk for document_id in document_ids for chunk in chunks.get(document_id, [])]
    started = time.perf_counter()
    extractor.extract(texts)
    return {"seconds": round(time.perf_counter() - started, 2), "documents": len(document_ids), "chunks": len(texts)}


def extraction_figures(step: Mapping[str, Any], parse_alone: Mapping[str, float]) -> dict[str, float]:
    """The extraction step against its floor (the parse alone), and its serial part: the merge,
    holding the graph write lock, over the step's wall time; with it, the speedup Amdahl's law
    allows `AMDAHL_WORKERS` workers extracting side by side (each merge still one at a time)."""
    seconds, merge = float(step["seconds"]), float(step["merge_seconds"])
    resolve_ahead, name_index = float(step["resolve_ahead_seconds"]), float(step["name_index_seconds"])
    serial_share = merge / seconds if seconds > 0 else 0.0
    documents = parse_alone["documents"]
    return {
        "step_seconds": round(seconds, 2),
        "extract_seconds": float(step["extract_seconds"]),
        "stage_seconds": float(step["stage_seconds"]),
        "resolve_ahead_seconds": resolve_ahead,
        "lock_wait_seconds": float(step["lock_wait_seconds"]),
        "merge_seconds": round(merge, 2),
        "name_index_seconds": name_index,
        "parse_alone_seconds": parse_alone["seconds"],
        "step_over_parse_alone": round(seconds / parse_alone["seconds"], 2) if parse_alone["seconds"] else math.inf,
        "serial_share": round(serial_share, 4),
        "serial_share_target": SERIAL_SHARE_TARGET,
        "merge_ms_per_document": round(1000 * merge / documents, 2) if documents else 0.0,
        # The server's time for resolution, mentions and facts: the names resolved ahead of the
        # lock, the merge's one call per batch under it, and the new names moved into the trigram
        # index after it.
        "server_ms_per_document": round(1000 * (resolve_ahead + merge + name_index) / documents, 2) if documents else 0.0,
        "server_ms_per_document_target": SERVER_MS_PER_DOCUMENT_TARGET,
        "amdahl_workers": AMDAHL_WORKERS,
        "amdahl_speedup": round(1 / (serial_share + (1 - serial_share) / AMDAHL_WORKERS), 2),
    }


def _step_seconds(report: WriteReport, names: Sequence[str]) -> dict[str, float]:
    return {name: _seconds(report, name) for name in names if name in report.assets}


def _seconds(report: WriteReport, asset: str) -> float:
    """How long the run spent materializing `asset`."""
    seconds = report.assets[asset]["seconds"]
    if not isinstance(seconds, (int, float)):
        raise TypeError(f"the run recorded no seconds for {asset} (got {seconds!r})")
    return seconds


def run(arguments: argparse.Namespace) -> int:
    """Measure, print the report as JSON and its summary, and write it to `--json`."""
    try:
        if arguments.synthetic is not None:
            name = f"synthetic-{arguments.synthetic}"
            passages = synthetic_passages(arguments.synthetic, arguments.limit)
        else:
            name, passages = arguments.dataset.name, benchmark_passages(arguments.dataset, arguments.limit)
        result = measure_ingest(name, passages, progress=print)
    except LanegraphError as error:
        print(f"ingest benchmark: error: {error}", file=sys.stderr)
        return 2
    report = json.dumps(result, indent=2)
    print(report)
    print("\n".join(render_ingest(result)))
    if arguments.json:
        arguments.json.write_text(report + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_ingest_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
