"""`lanegraph eval` and the retrieval_eval asset, end to end on a tiny generated benchmark.

The CLI builds the toy corpus into its own database on the test server (the session's embedded
server, or a schema on DATABASE_URL), runs every arm and writes the report; the asset runs the same
evaluation and shows the table and the plot in its metadata.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipelines.cli import main
from tests import REPOSITORY
from pipelines.defs.read.retrieval_eval import retrieval_eval
from pipelines.evaluation.build import reset_eval_database
from tests.evaluation.read_assets import inline_png, materialized_metadata
from tests.evaluation.toy_dataset import DEV_QUESTIONS, write_toy_dataset

pytestmark = pytest.mark.slow

METRICS = {"recall@2", "recall@5", "recall@10", "ndcg@10", "mrr", "answer@budget", "p50_ms", "p95_ms"}
STANDARD_ARMS = {"bm25", "dense", "ppr", "sources", "find"}
DATASET = "toy_eval"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = write_toy_dataset(tmp_path_factory.mktemp("dataset"), DATASET)
    yield path
    reset_eval_database(DATASET)


def test_eval_command_reports_every_arm_and_reuses_the_build(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variant = tmp_path / "wider.yaml"
    variant.write_text(re.sub(r"(?m)^  k: \d+$", "  k: 12", (REPOSITORY / "lanes.yaml").read_text()))
    out = tmp_path / "report.json"

    assert main(["eval", "--dataset", str(dataset), "--json", str(out), "--lanes", str(variant)]) == 0
    printed = capsys.readouterr()
    report = json.loads(out.read_text())

    assert report["dataset"] == DATASET
    assert report["queries"] == DEV_QUESTIONS
    arms = report["arms"]
    assert STANDARD_ARMS | {"wider"} <= set(arms)
    assert any(name.startswith("find-minus-") for name in arms)
    for name, values in arms.items():
        assert set(values) == METRICS, name
        assert all(0.0 <= values[m] <= 1.0 for m in METRICS - {"p50_ms", "p95_ms"}), name
    # Every dev question names its bridge passage: the lexical and dense rankings must find it.
    assert arms["bm25"]["recall@10"] >= 0.5
    assert arms["dense"]["recall@10"] >= 0.5
    # Every answer is in a gold passage, so an arm that ranks one into the budget has it.
    assert report["answer_questions"] == DEV_QUESTIONS
    assert arms["dense"]["answer@budget"] > 0 and arms["find"]["answer@budget"] > 0
    assert set(report["significance"]["arms"]) == set(arms) - {"dense"}
    assert "building every asset" in printed.err
    table = printed.out.splitlines()
    assert table[1].split()[:2] == ["arm", "R@2"]
    assert {line.split()[0] for line in table[3:]} == set(arms)

    assert main(["eval", "--dataset", str(dataset), "--arms", "dense,find", "--k", "1,3", "--json", str(out)]) == 0
    again = capsys.readouterr()
    assert "reusing the toy_eval build" in again.err
    assert "building" not in again.err
    second = json.loads(out.read_text())
    assert list(second["arms"]) == ["dense", "find"]
    assert set(second["arms"]["find"]) == {"recall@1", "recall@3", "ndcg@10", "mrr", "answer@budget", "p50_ms", "p95_ms"}


def test_unknown_arm_is_one_line_error(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--dataset", str(dataset), "--arms", "find-minus-nothing"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("lanegraph: error: unknown arm 'find-minus-nothing'; arms are: bm25, dense")
    assert len(error.splitlines()) == 1


def test_asset_materializes_with_table_and_plot(dataset: Path, make_schema_url: Callable[[], str]) -> None:
    metadata = materialized_metadata(retrieval_eval, {"dataset_path": str(dataset), "arms": ["dense", "find"]}, make_schema_url())
    table = metadata["table"].value
    assert "| arm | R@2 | R@5 | R@10 | nDCG@10 | MRR |" in table
    assert "| find |" in table and "| dense |" in table
    inline_png(metadata["recall_plot"].value, r"Recall@k per arm")
    assert metadata["questions"].value == DEV_QUESTIONS
