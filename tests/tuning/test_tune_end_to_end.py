"""`lanegraph tune` and the retrieval_tuning asset, end to end on the toy benchmark.

The study runs on the dataset's evaluation build (built once for the module), resumes after a real
kill without losing or repeating a trial, compiles one statement per plan shape, and refuses to
write a lanes.yaml that dev does not show better (four dev questions cannot reach p < 0.05).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState

from pipelines.cli import main
from pipelines.defs.read.retrieval_tuning import retrieval_tuning
from pipelines.evaluation.build import eval_database_url, reset_eval_database
from pipelines.tuning.study import RETRY_ATTR, storage_for
from tests.evaluation.read_assets import inline_png, materialized_metadata
from tests.evaluation.toy_dataset import DEV_QUESTIONS, write_toy_dataset

pytestmark = pytest.mark.slow

DATASET = "toy_tune"
SPACE = """\
version: 1
objective: {{recall@2: 0.5, mrr: 0.5}}
seed: {seed}
settings:
  dense_weight: {{low: 0.0, high: 1.0, step: 0.1}}
  lexical_weight: {{low: 0.0, high: 1.0, step: 0.1}}
  bridge_weight: {{low: 0.0, high: 1.5, step: 0.5}}
plan:
  bridges: {{choices: [true, false]}}
"""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = write_toy_dataset(tmp_path_factory.mktemp("dataset"), DATASET)
    yield path
    reset_eval_database(DATASET)


def space_file(folder: Path, seed: int) -> Path:
    path = folder / f"space-{seed}.yaml"
    path.write_text(SPACE.format(seed=seed))
    return path


def test_tune_reports_statements_per_plan_shape_writes_results_and_refuses_an_unproven_write(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary_path, tuned = tmp_path / "summary.json", tmp_path / "tuned.yaml"
    arguments = ["tune", "--dataset", str(dataset), "--space", str(space_file(tmp_path, 1)), "--trials", "5"]
    status = main([*arguments, "--results", str(tmp_path / "out.csv"), "--json", str(summary_path), "--write", str(tuned)])
    printed = capsys.readouterr()

    assert status == 1
    assert f"not writing {tuned}: dev " in printed.err and "p=" in printed.err
    assert not tuned.exists()
    summary = json.loads(summary_path.read_text())
    assert (summary["trials_run"], summary["trials_finished"]) == (5, 5)
    trials = pd.read_csv(tmp_path / "out-trials.csv")
    assert list(trials["number"]) == [0, 1, 2, 3, 4]
    # Trial 0 scores the settings in force; then one statement per plan shape, however many trials.
    assert bool(trials.loc[0, "user_attrs_current_settings"])
    shapes = trials["params_plan.bridges"].nunique()
    assert summary["compiled_statements"] == summary["plan_shapes"] == summary["prepared_statements"] == shapes
    assert f"statements: {shapes} compiled, {shapes} prepared on the server, for {shapes} plan shape(s)" in printed.out
    assert {"objective", "recall@2", "mrr"} <= set(summary["dev"]["metrics"])
    questions = pd.read_csv(tmp_path / "out-questions.csv")
    assert len(questions) == 2 * DEV_QUESTIONS
    assert set(questions["arm"]) == {"current", "tuned"}
    assert {"question_id", "question", "gold_ranks", "recall@2", "mrr", "answer@budget"} <= set(questions.columns)

    # The study is done: a second run with the same target runs nothing more.
    assert main([*arguments]) == 0
    assert "0 to run" in capsys.readouterr().err


def test_a_killed_study_resumes_without_losing_or_repeating_a_trial(dataset: Path, tmp_path: Path) -> None:
    space = space_file(tmp_path, 2)
    command = [sys.executable, "-m", "pipelines.cli", "tune", "--dataset", str(dataset), "--space", str(space), "--trials", "6"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("trial 2 of 6"):
            break
    else:
        pytest.fail(f"tune ended before its second trial (exit {process.wait()})")
    # Killed outright (no handler runs): the trial it had begun stays RUNNING in the database.
    process.send_signal(signal.SIGKILL)
    process.wait()

    assert main([*command[3:], "--json", str(tmp_path / "summary.json")]) == 0
    study_name = json.loads((tmp_path / "summary.json").read_text())["study"]
    study = optuna.load_study(study_name=study_name, storage=storage_for(eval_database_url(DATASET)))
    trials = study.get_trials()
    assert [trial.number for trial in trials] == list(range(len(trials)))
    complete = [trial for trial in trials if trial.state == TrialState.COMPLETE]
    failed = [trial for trial in trials if trial.state == TrialState.FAIL]
    assert len(complete) == 6 and len(trials) == 6 + len(failed)
    assert not [trial for trial in trials if trial.state in (TrialState.RUNNING, TrialState.WAITING)]
    for trial in failed:
        (retry,) = [done for done in complete if done.user_attrs.get(RETRY_ATTR) == trial.number]
        assert retry.params == trial.params and retry.number > trial.number


def test_retrieval_tuning_materializes_with_plots_and_tables(dataset: Path, tmp_path: Path, make_schema_url: Callable[[], str]) -> None:
    config = {"dataset_path": str(dataset), "trials": 4, "space_path": str(space_file(tmp_path, 3))}
    metadata = materialized_metadata(retrieval_tuning, config, make_schema_url())
    assert metadata["trials_finished"].value == 4
    assert metadata["compiled_statements"].value == metadata["plan_shapes"].value
    for plot in ("trial_history", "importances"):
        inline_png(metadata[plot].value)
    trials = metadata["trials"].value
    assert len(trials.records) == 4 and "value" in {column.name for column in trials.schema.columns}
    assert len(metadata["dev_questions"].value.records) == 2 * DEV_QUESTIONS
    assert "| objective (0.5·recall@2 + 0.5·mrr) |" in metadata["dev_comparison"].value
    assert set(metadata["best_settings"].value) == {"dense_weight", "lexical_weight", "bridge_weight", "plan.bridges"}
