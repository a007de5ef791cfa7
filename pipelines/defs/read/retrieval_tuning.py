"""Retrieval settings tuned as an asset: a study on a dataset's train questions, judged on dev.

The same study `lanegraph tune` runs (pipelines/tuning/), kept in the dataset's evaluation database,
so a later materialization continues it: raise `trials` to search further, or materialize again after
the corpus changed (a new build starts a new study). The materialization shows the best settings,
the dev comparison with the current lanes.yaml, the trial history and each setting's importance as
plots, and the trials and per-question results as tables. It never edits lanes.yaml: copy the
values, or run `lanegraph tune --write`.
"""

# No `from __future__ import annotations`: Dagster reads the run config class from the live annotation.
import math
from pathlib import Path

import dagster as dg
import pandas as pd
from pydantic import Field

from pipelines.defs.code_location import code_location
from pipelines.orchestration.groups import READ_GROUP
from pipelines.resources.database import DatabaseResource
from pipelines.charts import markdown_image
from pipelines.tuning.plot import history_png, importance_png
from pipelines.tuning.run import DEFAULT_TRIALS, TuningRequest, default_space_path, tune

# Dagster keeps metadata in its event log: the tables show the first rows; --results has them all.
TABLE_ROWS = 200


class RetrievalTuningConfig(dg.Config):
    dataset_path: str = Field(description="Dataset JSON with train questions (meta.split = train) to tune on and dev questions to judge.")
    trials: int = Field(default=DEFAULT_TRIALS, ge=1, description="Finished trials the study should reach, counting earlier runs'.")
    timeout_seconds: float = Field(default=0, ge=0, description="Start no trial after this many seconds; 0 = no limit.")
    space_path: str = Field(default="", description="Search space YAML; empty = ./tuning.yaml, else the shipped space.")
    queries: int = Field(default=0, ge=0, description="Tune on the first N train questions only; 0 = all.")


def _cell(value: object) -> str | int | float | bool | None:
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def frame_table(frame: pd.DataFrame) -> dg.MetadataValue:
    """A DataFrame as Dagster table metadata: its columns typed, its first TABLE_ROWS rows."""
    types = {"i": "int", "u": "int", "f": "float", "b": "bool"}
    schema = dg.TableSchema(
        columns=[dg.TableColumn(str(name), types.get(dtype.kind, "string")) for name, dtype in frame.dtypes.items()]
    )
    records = [
        dg.TableRecord({str(name): _cell(value) for name, value in row.items()})
        for row in frame.head(TABLE_ROWS).to_dict(orient="records")
    ]
    return dg.MetadataValue.table(records=records, schema=schema)


@dg.asset(
    group_name=READ_GROUP,
    deps=["find_statement"],
    description="Retrieval settings searched with Optuna on a dataset's train questions and judged on dev against lanes.yaml.",
)
def retrieval_tuning(
    context: dg.AssetExecutionContext, config: RetrievalTuningConfig, database: DatabaseResource
) -> dg.MaterializeResult:
    request = TuningRequest(
        dataset=Path(config.dataset_path),
        definitions=code_location(),
        trials=config.trials,
        timeout_seconds=config.timeout_seconds or None,
        space_path=Path(config.space_path) if config.space_path else default_space_path(),
        # The lanes.yaml find_statement compiled: the settings the tuned ones are judged against.
        config_path=database.settings_path(),
        queries=config.queries or None,
    )
    outcome = tune(request, progress=context.log.info)
    metadata: dict[str, dg.MetadataValue] = {
        "study": dg.MetadataValue.text(outcome.study),
        "objective": dg.MetadataValue.text(outcome.objective),
        "trials_run": dg.MetadataValue.int(outcome.trials_run),
        "trials_finished": dg.MetadataValue.int(outcome.trials_finished),
        "trials_per_minute": dg.MetadataValue.float(round(outcome.trials_per_minute, 2)),
        "plan_shapes": dg.MetadataValue.int(outcome.plan_shapes),
        "compiled_statements": dg.MetadataValue.int(outcome.compiled_statements),
        "prepared_statements": dg.MetadataValue.int(outcome.prepared_statements),
        "summary": dg.MetadataValue.json(outcome.summary()),
        "trials": frame_table(outcome.trials),
        "trial_history": dg.MetadataValue.md(markdown_image(history_png(outcome.study_handle, outcome.objective), "objective per trial")),
    }
    importance = importance_png(outcome.study_handle)
    if importance is not None:
        metadata["importances"] = dg.MetadataValue.md(markdown_image(importance, "importance of each searched value"))
    if outcome.comparison is not None and outcome.best_value is not None:
        metadata["best_train_objective"] = dg.MetadataValue.float(round(outcome.best_value, 4))
        metadata["best_settings"] = dg.MetadataValue.json({**outcome.best_settings, **{f"plan.{k}": v for k, v in outcome.best_plan.items()}})
        metadata["dev_comparison"] = dg.MetadataValue.md(outcome.comparison.markdown())
        metadata["dev_improved"] = dg.MetadataValue.bool(outcome.comparison.improved)
        metadata["dev_questions"] = frame_table(outcome.questions)
    return dg.MaterializeResult(metadata=metadata)
