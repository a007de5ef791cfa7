"""Retrieval quality as an asset: edit lanes.yaml, materialize, read the table and the plot.

With no `dataset_path` in the run config the asset evaluates a small benchmark generated from the
shipped demo corpus (its document-grounded demo questions), so it always materializes offline;
point `dataset_path` at ../shared/data/musique.json or hotpotqa.json for the real benchmarks.
Either way the evaluation runs in the dataset's own database (see pipelines/evaluation/build.py),
built once per corpus, never in the database the other assets write.
"""

# No `from __future__ import annotations`: Dagster reads the run config class from the live annotation.
from enum import Enum
from pathlib import Path

import dagster as dg
from pydantic import Field

from pipelines.config import data_dir
from pipelines.defs.code_location import code_location
from pipelines.evaluation.demo_dataset import DEMO_DATASET_NAME, write_demo_dataset
from pipelines.evaluation.plot import recall_plot_markdown
from pipelines.evaluation.report import markdown_table
from pipelines.evaluation.run import DEFAULT_CUTOFFS, EvaluationRequest, evaluate
from pipelines.orchestration.groups import READ_GROUP
from pipelines.resources.database import DatabaseResource


class SplitChoice(str, Enum):  # noqa: UP042 (the str-and-Enum form Dagster's config reads)
    """Dagster's run config takes enums, not Literal types; the values are the dataset splits."""

    dev = "dev"
    train = "train"
    all = "all"


class RetrievalEvalConfig(dg.Config):
    dataset_path: str = Field(default="", description="Benchmark dataset JSON; empty = generated from the demo corpus.")
    split: SplitChoice = Field(default=SplitChoice.dev, description="dev (questions not marked train), train (tuning only) or all.")
    queries: int = Field(default=0, ge=0, description="Evaluate only the first N questions; 0 = all.")
    arms: list[str] = Field(default=[], description="Arms to run; empty = all (bm25, dense, sources, find, ablations).")
    lanes_files: list[str] = Field(default=[], description="Extra lanes.yaml files, each an arm named after its file.")
    cutoffs: list[int] = Field(default=list(DEFAULT_CUTOFFS), description="Recall@k cutoffs.")


@dg.asset(
    group_name=READ_GROUP,
    deps=["find_statement"],
    description="Recall@k, nDCG@10, MRR and latency of every retrieval arm and ablation on a benchmark.",
)
def retrieval_eval(
    context: dg.AssetExecutionContext, config: RetrievalEvalConfig, database: DatabaseResource
) -> dg.MaterializeResult:
    dataset = (
        Path(config.dataset_path)
        if config.dataset_path
        else write_demo_dataset(data_dir() / "eval" / DEMO_DATASET_NAME / "dataset.json")
    )
    request = EvaluationRequest(
        dataset=dataset,
        definitions=code_location(),
        split=config.split.value,
        queries=config.queries or None,
        arms=tuple(config.arms),
        cutoffs=tuple(config.cutoffs),
        lanes_files=tuple(Path(path) for path in config.lanes_files),
        # The lanes.yaml find_statement compiled, so the table describes that statement.
        config_path=database.settings_path(),
    )
    report = evaluate(request, progress=context.log.info)
    arms, questions = report["arms"], report["queries"]
    if not isinstance(arms, dict) or not isinstance(questions, int):
        raise TypeError("the evaluation report lacks its arms or its question count")
    find_arm = arms.get("find", {})
    return dg.MaterializeResult(
        metadata={
            "table": dg.MetadataValue.md(markdown_table(report)),
            "recall_plot": dg.MetadataValue.md(recall_plot_markdown(report)),
            "dataset": dg.MetadataValue.text(str(report["dataset"])),
            "questions": dg.MetadataValue.int(questions),
            **{f"find_{metric}": dg.MetadataValue.float(float(value)) for metric, value in find_arm.items()},
            "report": dg.MetadataValue.json(report),
        }
    )
