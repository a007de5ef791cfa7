"""A study as pandas DataFrames, where analysts look for it, written as CSV or Parquet.

- trials: Optuna's `trials_dataframe()` (number, state, value, duration, each param and user
  attribute: every metric on train and find's p50).
- questions: one row per dev question and arm (current, tuned): the rank of each gold passage
  (1-based, empty when not retrieved) and each metric for that question.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import optuna
import pandas as pd

from pipelines.errors import InputError
from pipelines.evaluation.answers import ANSWER_METRIC, scored_questions
from pipelines.tuning.scoring import SplitScores

WRITERS = {".csv": "csv", ".parquet": "parquet"}


def trial_frame(study: optuna.Study) -> pd.DataFrame:
    frame = study.trials_dataframe(attrs=("number", "state", "value", "duration", "params", "user_attrs"))
    if "duration" in frame:
        frame["duration"] = frame["duration"].dt.total_seconds()
    return frame


def gold_ranks(gold_ids: tuple[str, ...], ranking: list[str] | tuple[str, ...]) -> list[int | None]:
    positions = {passage: rank for rank, passage in enumerate(ranking, start=1)}
    return [positions.get(gold) for gold in gold_ids]


def question_frame(arms: Mapping[str, SplitScores]) -> pd.DataFrame:
    rows = []
    for arm, scores in arms.items():
        answered = {question.id: index for index, question in enumerate(scored_questions(scores.questions))}
        for index, question in enumerate(scores.questions):
            ranks = gold_ranks(question.gold_ids, list(scores.rankings.get(question.id, ())))
            row: dict[str, object] = {
                "question_id": question.id,
                "question": question.text,
                "arm": arm,
                "gold_ids": " ".join(question.gold_ids),
                "gold_ranks": " ".join("-" if rank is None else str(rank) for rank in ranks),
                "best_gold_rank": min((rank for rank in ranks if rank is not None), default=None),
            }
            for metric, values in scores.per_question.items():
                if metric == ANSWER_METRIC:
                    position = answered.get(question.id)
                    row[metric] = None if position is None else float(values[position])
                else:
                    row[metric] = float(values[index])
            rows.append(row)
    return pd.DataFrame(rows)


def results_paths(path: Path) -> dict[str, Path]:
    """`out.csv` → out-trials.csv and out-questions.csv (likewise .parquet)."""
    if path.suffix.lower() not in WRITERS:
        raise InputError(f"{path}: --results writes .csv or .parquet files")
    return {name: path.with_name(f"{path.stem}-{name}{path.suffix}") for name in ("trials", "questions")}


def write_results(path: Path, frames: Mapping[str, pd.DataFrame]) -> list[Path]:
    paths = results_paths(path)
    written = []
    for name, target in paths.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        if WRITERS[target.suffix.lower()] == "csv":
            frames[name].to_csv(target, index=False)
        else:
            frames[name].to_parquet(target, index=False)
        written.append(target)
    return written
