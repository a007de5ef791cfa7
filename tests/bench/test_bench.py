"""`lanegraph bench` at a tiny size: it runs against the test server and writes a well-formed report.

Nothing here asserts a latency: timings depend on the machine. Only the report's shape is checked.
"""

from __future__ import annotations

import argparse
import json
import math
import uuid
from pathlib import Path

import pytest

from pipelines.bench.floor import floor_probes
from pipelines.bench.harness import BenchOptions, run_benchmark
from pipelines.bench.report import render_table, write_json
from pipelines.cli import main
from pipelines.cli.bench import parse_rtts, parse_sizes
from pipelines.config import load_config
from pipelines.read.compiler import compile_find
from tests import REPOSITORY
from pipelines.resources.database import connect
from tests.plans import every_lane_on

POSITIVE_KEYS = (
    "find_p50_ms", "find_p95_ms", "floor_p50_ms", "floor_p95_ms", "find_vs_floor", "roundtrips_p50_ms",
    "roundtrips_p95_ms", "single_vs_roundtrips", "generic_p50_ms", "custom_p50_ms", "confined_p50_ms",
    "confined_per_call_p50_ms", "hnsw_build_seconds", "bm25_vs_dense_chunk",
)
LANES = ("facts", "sources", "entity_catalog", "working_memory", "profile", "communities", "overview")


def test_tiny_benchmark_writes_a_well_formed_report(server_url: str, tmp_path: Path) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    config = every_lane_on(load_config(REPOSITORY / "lanes.yaml"))
    without_bridges = config.model_copy(update={"plan": config.plan.model_copy(update={"bridges": False})})
    options = BenchOptions(
        sizes=(120, 200), queries=5, explain_queries=3, schema_prefix=prefix,
        variants=(("no_bridges", without_bridges),), rtts=(0.0, 1.0),
    )
    report = run_benchmark(server_url, config, options)
    output = tmp_path / "report.json"
    write_json(report, output)
    written = json.loads(output.read_text())

    assert written["chunks"] == 200 and written["questions"] == 5
    for key in POSITIVE_KEYS:
        assert isinstance(written[key], (int, float)) and math.isfinite(written[key]) and written[key] > 0, key
    assert 0 <= written["planning_share"] < math.inf
    assert set(written["lanes"]) == set(LANES)
    assert {"dense_chunk", "dense_fact", "dense_entity", "bm25", "profile", "communities",
            "working_memory"} <= set(written["floor"])
    assert all(probe["p50_ms"] > 0 for probe in written["floor"].values())
    recall = written["dense_recall"]
    assert recall["ann_search_depth"] == config.settings.ann_search_depth and recall["questions"] == 5
    assert set(recall["probes"]) == {name for name in written["floor"] if name in {"dense_chunk", "dense_fact",
            "dense_entity", "entity_kind", "working_memory", "profile", "communities"}}
    # A few hundred rows are far fewer than one search keeps: the HNSW rankings are the exact ones.
    assert all(share == 1.0 for share in recall["probes"].values())
    assert written["checks"] == {"roundtrips_match_single": True, "generic_matches_custom": True}
    assert set(written["planning"]["find"]) == {"auto", "force_generic_plan", "force_custom_plan"}
    assert [size["chunks"] for size in written["sizes"]] == [120, 200]
    step = written["scaling"][0]
    assert step["from_chunks"] == 120 and step["to_chunks"] == 200 and step["find_p50_growth_per_10x"] > 0
    for key in ("find_p50_growth", "find_p95_growth", "floor_p50_growth", "load_growth", "index_build_growth"):
        assert isinstance(step[key], (int, float)) and step[key] > 0, key
    assert step["find_p50_growth"] == pytest.approx(written["find_p50_ms"] / written["sizes"][0]["find_p50_ms"])
    assert all(size["load_seconds"] > 0 for size in written["sizes"])
    # The keys the loader adds after the COPY are timed like the indexes, and are back afterwards.
    assert {"bm25_posting_pkey", "entity_mention_pkey"} <= set(written["index_build_seconds"])
    assert "chunk_embedding_hnsw" in written["index_build_seconds"]
    # The bridge hop reads entity_mention: a corpus without mentions would time it doing nothing.
    assert written["corpus"]["rows"]["entity_mention"] >= written["chunks"]
    assert {"entity_mention_chunk_idx", "entity_mention_document_idx"} <= set(written["index_build_seconds"])
    # Another lanes.yaml is timed beside find on the same questions, as find@<name>.
    variant = written["variants"]["no_bridges"]
    assert variant["p50_ms"] > 0 and variant["vs_find"] == pytest.approx(variant["p50_ms"] / written["find_p50_ms"])
    assert written["latency"]["find@no_bridges"]["samples"] == written["latency"]["find"]["samples"]
    # The round-trip arms again across the hop, once per round-trip time, every question each.
    assert [hop["rtt_ms"] for hop in written["network"]] == [0.0, 1.0]
    for hop in written["network"]:
        for arm in ("find", "roundtrips", "roundtrips_concurrent", "empty_round_trip"):
            assert hop[f"{arm}_p50_ms"] > 0, arm
        assert hop["single_vs_roundtrips"] == pytest.approx(hop["find_p50_ms"] / hop["roundtrips_p50_ms"])
    # A 1 ms hop costs every round trip at least its millisecond.
    assert written["network"][1]["empty_round_trip_p50_ms"] >= 1.0
    rendered = render_table(written)
    assert "rtt    1 ms" in rendered
    assert "find, one statement" in rendered and "no_bridges settings" in rendered
    assert "120 → 200 chunks: find p50" in rendered and "load s" in rendered
    with connect(server_url, autocommit=True) as connection:
        left = connection.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE %s", (prefix + "%",)
        ).fetchone()[0]
    assert left == 0, "the benchmark drops its corpus schemas unless asked to keep them"


def test_round_trip_times_are_milliseconds_from_0_up() -> None:
    assert parse_rtts("0,0.5,1,2") == (0.0, 0.5, 1.0, 2.0)
    for wrong in ("-1", "fast", "1000"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_rtts(wrong)


def test_sizes_take_k_and_m_suffixes() -> None:
    assert parse_sizes("10k,100k,1m") == (10_000, 100_000, 1_000_000)
    assert parse_sizes("1M") == (1_000_000,)


def test_a_size_below_the_minimum_is_one_line_and_exit_status_2(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--chunks", "5"])
    assert exit_.value.code == 2
    assert "is not a corpus size" in capsys.readouterr().err


def test_a_lanes_file_for_another_embedding_width_is_one_line_and_exit_status_2(tmp_path: Path, capsys) -> None:
    other = tmp_path / "wide.yaml"
    other.write_text(
        (REPOSITORY / "lanes.yaml").read_text().replace("    dimension: 384", "    dimension: 768")
    )
    assert main(["bench", "--lanes", str(other)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (
        f"lanegraph: error: {other}: pipeline.embedding.dimension is 768, "
        "but the benchmark corpus is built for 384 (lanes.yaml)"
    )


def test_the_floor_probes_only_what_the_statement_reads() -> None:
    """A lane lanes.yaml leaves out costs find nothing, so its index is no part of the floor."""
    config = load_config(REPOSITORY / "lanes.yaml")
    dimension = config.pipeline.embedding.dimension
    every = {probe.name for probe in floor_probes(compile_find(every_lane_on(config)), dimension)}
    default = {probe.name for probe in floor_probes(compile_find(config), dimension)}
    assert {"profile", "communities", "entity_kind", "dense_entity", "dense_chunk", "bm25", "title", "mentions"} <= every
    # The overview lane reads the few RAPTOR roots through raptor_node_level_idx, not HNSW.
    assert "raptor" not in every
    # Nor does the default facts lane look named entities up: it walks from them only when hops > 0.
    assert default == every - {"profile", "communities", "entity_kind", "dense_entity", "mentions"}
