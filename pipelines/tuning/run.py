"""A tuning study end to end: reuse the dataset's build, search on train, judge the best on dev.

Every trial runs the train questions through the find statement of its plan shape on ONE pooled
connection: the compiler's cache hands a value-only trial the statement it already compiled, and
psycopg finds it already prepared on the server, so the trial binds new values and executes. The
outcome counts the statements compiled and those the server holds prepared, one per plan shape.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import optuna
import pandas as pd

from pipelines.config import LanegraphConfig, default_config_path, load_config
from pipelines.errors import InputError
from pipelines.evaluation.answers import ANSWER_METRIC
from pipelines.evaluation.build import ensure_built
from pipelines.evaluation.dataset import load_dataset
from pipelines.evaluation.passages import load_chunk_documents
from pipelines.resources.database import Database
from pipelines.resources.embedder import EmbedderResource
from pipelines.tuning.compare import DevComparison, compare_on_dev
from pipelines.tuning.scoring import SplitScorer, SplitScores, StatementLedger
from pipelines.tuning.space import DEFAULT_SPACE, Scalar, TuningSpace, apply_params, load_space, split_params
from pipelines.tuning.study import (
    CONSTRAINTS_ATTR,
    CURRENT_ATTR,
    FINISHED,
    best_trial,
    open_study,
    opened_storage,
    recover_interrupted,
    study_lock,
    study_name,
)
from pipelines.tuning.tables import question_frame, trial_frame
from pipelines.write.progress import duration

Progress = Callable[[str], None]
DEFAULT_TRIALS = 40


def default_space_path() -> Path:
    """A tuning.yaml in the working directory, else the shipped space."""
    local = Path("tuning.yaml")
    return local if local.is_file() else DEFAULT_SPACE


@dataclass(frozen=True)
class TuningRequest:
    dataset: Path
    definitions: dg.Definitions
    trials: int = DEFAULT_TRIALS
    timeout_seconds: float | None = None
    space_path: Path = field(default_factory=default_space_path)
    config_path: Path = field(default_factory=default_config_path)
    # Only the first N train questions (a quicker, noisier study).
    queries: int | None = None
    database_url: str | None = None


@dataclass(frozen=True)
class TuningOutcome:
    study: str
    dataset: str
    objective: str
    train_questions: int
    trials_run: int
    trials_finished: int
    interrupted_recovered: int
    seconds: float
    plan_shapes: int
    compiled_statements: int
    prepared_statements: int
    best_number: int | None
    best_value: float | None
    current_value: float | None
    best_settings: dict[str, Scalar]
    best_plan: dict[str, Scalar]
    tuned_config: LanegraphConfig | None
    comparison: DevComparison | None
    trials: pd.DataFrame
    questions: pd.DataFrame
    study_handle: optuna.Study = field(repr=False)

    @property
    def trials_per_minute(self) -> float:
        return 60 * self.trials_run / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> dict[str, object]:
        return {
            "study": self.study,
            "dataset": self.dataset,
            "objective": self.objective,
            "train_questions": self.train_questions,
            "trials_run": self.trials_run,
            "trials_finished": self.trials_finished,
            "interrupted_recovered": self.interrupted_recovered,
            "seconds": round(self.seconds, 1),
            "trials_per_minute": round(self.trials_per_minute, 2),
            "plan_shapes": self.plan_shapes,
            "compiled_statements": self.compiled_statements,
            "prepared_statements": self.prepared_statements,
            "best_trial": self.best_number,
            "best_train_objective": self.best_value,
            "current_train_objective": self.current_value,
            "best_settings": self.best_settings,
            "best_plan": self.best_plan,
            "dev": self.comparison.to_json() if self.comparison else None,
        }


class _TrialProgress:
    """One line per finished trial: n of N, its score, the best so far, the rate and time left."""

    def __init__(self, total: int, timeout: float | None, label: str, progress: Progress) -> None:
        self.total, self.timeout, self.label, self.progress = total, timeout, label, progress
        self.started = time.monotonic()
        self.done = 0

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if trial.state not in FINISHED:
            return
        self.done += 1
        elapsed = time.monotonic() - self.started
        left = elapsed / self.done * (self.total - self.done)
        if self.timeout is not None:
            left = min(left, max(0.0, self.timeout - elapsed))
        best = best_trial(study)
        best_text = f"best {best.value:.4f} (trial {best.number})" if best and best.value is not None else "no feasible trial yet"
        p50 = trial.user_attrs.get("find_p50_ms", 0.0)
        self.progress(
            f"trial {self.done} of {self.total} (#{trial.number}): {self.label} {trial.value:.4f}, p50 {p50:.1f} ms; "
            f"{best_text}; {60 * self.done / elapsed:.1f} trials/min, about {duration(left)} left"
        )


def _objective(space: TuningSpace, base: LanegraphConfig, scorer: SplitScorer) -> Callable[[optuna.Trial], float]:
    weights = space.weights
    limit = space.constraints.find_p50_ms

    def objective(trial: optuna.Trial) -> float:
        config = space.suggest(trial, base)
        scores = scorer.score(f"trial-{trial.number}", config)
        for metric in scores.per_question:
            trial.set_user_attr(metric, round(scores.mean(metric), 6))
        trial.set_user_attr("find_p50_ms", scores.p50_ms)
        if limit is not None:
            trial.set_user_attr(CONSTRAINTS_ATTR, [scores.p50_ms - limit])
        return scores.objective(weights)

    return objective


def _check_objective(space: TuningSpace, scorer: SplitScorer, dataset: Path) -> None:
    if ANSWER_METRIC in space.weights and not scorer.answers:
        raise InputError(f"{dataset}: the objective uses {ANSWER_METRIC}, but no train question has an answer to look for")


def tune(request: TuningRequest, progress: Progress = lambda _: None) -> TuningOutcome:
    if request.trials < 1:
        raise InputError(f"--trials must be at least 1, got {request.trials}")
    space = load_space(request.space_path)
    base = load_config(request.config_path)
    dataset = load_dataset(request.dataset)
    train = dataset.questions_in("train", request.queries)
    dev = dataset.questions_in("dev")
    if not train:
        raise InputError(f"{request.dataset}: no train questions to tune on (mark some with \"meta\": {{\"split\": \"train\"}})")
    if not dev:
        raise InputError(f"{request.dataset}: no dev questions to judge the tuned settings on (every question is marked train)")
    url = ensure_built(dataset, request.definitions, progress, request.database_url)
    name = study_name(dataset.name, space, base)
    ledger = StatementLedger()
    # One connection: every trial's statement is prepared on it once, and stays prepared.
    with opened_storage(url) as storage, Database(url, max_size=1) as database, study_lock(url, name):
        with database.connection() as connection:
            chunk_documents = load_chunk_documents(connection)
        embedder = EmbedderResource.from_settings(base.pipeline.embedding).get_embedder()
        train_scorer = SplitScorer(database, train, embedder, chunk_documents, space.cutoffs(), ledger)
        _check_objective(space, train_scorer, request.dataset)
        train_scorer.warm_up()
        study = open_study(storage, name, space)
        interrupted = recover_interrupted(study)
        if interrupted:
            progress(f"study {name}: {len(interrupted)} trial(s) a stopped run left unfinished marked failed and queued again")
        if not study.trials:
            current = space.params_of(base)
            if current is not None:
                # The first trial scores the settings in force: the bar every other trial must clear.
                study.enqueue_trial(current, user_attrs={CURRENT_ATTR: True})
        finished_before = len(study.get_trials(deepcopy=False, states=FINISHED))
        remaining = max(0, request.trials - finished_before)
        progress(
            f"study {name}: {finished_before} trial(s) finished before, {remaining} to run on "
            f"{len(train)} train questions; objective {space.objective_label}"
        )
        started = time.monotonic()
        if remaining:
            study.optimize(
                _objective(space, base, train_scorer),
                n_trials=remaining,
                timeout=request.timeout_seconds,
                callbacks=[_TrialProgress(remaining, request.timeout_seconds, space.objective_label, progress)],
                gc_after_trial=False,
            )
        seconds = time.monotonic() - started
        trials_run = len(study.get_trials(deepcopy=False, states=FINISHED)) - finished_before
        best = best_trial(study)
        current_trial = next((t for t in study.get_trials(deepcopy=False, states=FINISHED) if t.user_attrs.get(CURRENT_ATTR)), None)
        tuned: LanegraphConfig | None = None
        comparison: DevComparison | None = None
        settings: dict[str, Scalar] = {}
        plan: dict[str, Scalar] = {}
        dev_scores: dict[str, SplitScores] = {}
        if best is not None:
            settings, plan = split_params(best.params)
            tuned = apply_params(base, settings, plan)
            progress(f"judging trial {best.number} on {len(dev)} dev questions beside the current settings")
            dev_scorer = SplitScorer(database, dev, embedder, chunk_documents, space.cutoffs(), ledger)
            dev_scores = {"current": dev_scorer.score("current", base), "tuned": dev_scorer.score("tuned", tuned)}
            comparison = compare_on_dev(dev_scores["current"], dev_scores["tuned"], space.weights, space.objective_label)
        prepared = ledger.prepared_count(database)
    return TuningOutcome(
        study=name,
        dataset=dataset.name,
        objective=space.objective_label,
        train_questions=len(train),
        trials_run=trials_run,
        trials_finished=finished_before + trials_run,
        interrupted_recovered=len(interrupted),
        seconds=seconds,
        plan_shapes=len(ledger.shapes),
        compiled_statements=ledger.compiled_count,
        prepared_statements=prepared,
        best_number=best.number if best else None,
        best_value=best.value if best else None,
        current_value=current_trial.value if current_trial else None,
        best_settings=settings,
        best_plan=plan,
        tuned_config=tuned,
        comparison=comparison,
        trials=trial_frame(study),
        questions=question_frame(dev_scores),
        study_handle=study,
    )
