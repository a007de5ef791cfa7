"""The ingest benchmark on a few demo passages: the report's shape, the full build beside the chunk
embeddings and the one-document ingest into the built corpus included (their figures, not their
size, which only a real corpus makes meaningful)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.bench.ingest import REBUILDING, main, synthetic_passages
from pipelines.bench.synthetic import CorpusShape, SyntheticCorpus
from pipelines.bench.report import render_ingest
from pipelines.cli import main as cli
from pipelines.config import load_config
from pipelines.evaluation.demo_dataset import write_demo_dataset


def test_the_ingest_benchmark_reports_one_document_against_the_full_build(server_url: str, tmp_path: Path) -> None:
    dataset = write_demo_dataset(tmp_path / "demo.json")
    assert cli(["bench", "ingest", str(dataset), "--limit", "6", "--json", str(tmp_path / "ingest.json")]) == 0
    report = json.loads((tmp_path / "ingest.json").read_text())
    assert report["passages"] == 5 and report["end_to_end_seconds"] > 0
    one = report["one_document"]
    assert one["seconds"] > 0 and one["full_build_seconds"] > report["end_to_end_seconds"]
    # The share is of the unrounded times; the report rounds each time to 0.01 s, which moves the
    # quotient of a few seconds' build by up to 0.01 s over the build.
    assert one["share_of_full_build"] == pytest.approx(
        one["seconds"] / one["full_build_seconds"], abs=1e-4 + 0.01 / one["full_build_seconds"]
    )
    assert {"documents", "entities_and_facts", "communities"} <= set(one["steps"])
    assert set(one["graph_refresh"]) == set(REBUILDING)
    assert all(figures["mode"] == "incremental" for figures in one["graph_refresh"].values())
    assert all(one["checks"].values()), one["checks"]
    # The full build beside the chunk_embeddings step of the same run, as the target reads.
    chunk_embeddings = report["steps"]["chunk_embeddings"]["seconds"]
    assert one["full_build_seconds"] == pytest.approx(report["end_to_end_seconds"] + one["graph_wide_seconds"], abs=0.02)
    assert report["full_build_over_chunk_embeddings"] == pytest.approx(one["full_build_seconds"] / chunk_embeddings, abs=0.01)
    assert report["graph_wide_over_chunk_embeddings"] == pytest.approx(one["graph_wide_seconds"] / chunk_embeddings, abs=0.01)
    assert report["full_build_over_model_alone"] > 0 and report["full_build_target_over_chunk_embeddings"] == 3.5
    # Every step beside the embedding step; the extraction against the parse alone, its serial part.
    assert set(report["steps_over_chunk_embeddings"]) >= {"documents", "entities_and_facts", "raptor_levels"}
    extraction = one["extraction"]
    assert extraction["parse_alone_seconds"] > 0 and extraction["merge_seconds"] > 0
    assert extraction["serial_share"] == pytest.approx(
        extraction["merge_seconds"] / extraction["step_seconds"], abs=0.01 / extraction["step_seconds"] + 1e-4
    )
    assert 1 <= extraction["amdahl_speedup"] <= extraction["amdahl_workers"]
    assert extraction["merge_ms_per_document"] > 0 and extraction["resolve_ahead_seconds"] > 0
    assert extraction["server_ms_per_document"] >= extraction["merge_ms_per_document"]
    rendered = render_ingest(report)
    assert any(line.startswith("  serial share (merge under the graph lock / step) ") for line in rendered)
    assert any(line.startswith("  one more document into the built corpus: ") for line in rendered)
    assert any(line.startswith("  full build ") for line in rendered)


def test_the_ingest_benchmark_refuses_a_corpus_it_cannot_hold_a_passage_out_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = write_demo_dataset(tmp_path / "demo.json")
    assert main([str(dataset), "--limit", "1"]) == 2
    assert f"{dataset}: the ingest benchmark needs at least 2 passages" in capsys.readouterr().err


def test_the_synthetic_corpus_goes_through_the_write_side_one_document_a_passage(server_url: str, tmp_path: Path) -> None:
    corpus = SyntheticCorpus(CorpusShape(64, load_config().pipeline.embedding.dimension))
    documents = [document for block in corpus.content_blocks() for document in block.documents]
    passages = synthetic_passages(64, None)
    assert [(p.id, p.title, p.text) for p in passages] == [(d[0], d[1], d[3]) for d in documents]
    assert synthetic_passages(64, 3) == passages[:3]
    assert cli(["bench", "ingest", "--synthetic", "24", "--json", str(tmp_path / "ingest.json")]) == 0
    report = json.loads((tmp_path / "ingest.json").read_text())
    assert report["dataset"] == "synthetic-24" and report["passages"] == 2
    assert report["chunks"] >= 2 and all(report["one_document"]["checks"].values())


@pytest.mark.parametrize("arguments", [[], ["demo.json", "--synthetic", "100k"], ["--synthetic", "1k,2k"]])
def test_the_ingest_benchmark_takes_a_dataset_or_a_synthetic_size(
    arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        cli(["bench", "ingest", *arguments])
    assert refused.value.code == 2
    assert "--synthetic" in capsys.readouterr().err
