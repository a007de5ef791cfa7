"""The Optuna study of one dataset, kept in the dataset's own evaluation database.

Studies live in the schema `optuna` (Optuna's RDB storage creates its tables there) of the
database `lanegraph eval` built for the dataset, so a study is dropped with the build it was tuned
on, and two datasets never share one. The study's name also carries the space's fingerprint and the
lanes.yaml retrieval settings it started from: change either and a new study starts, rather than
TPE mixing trials scored under another objective.

While a `lanegraph tune` runs a study it holds a PostgreSQL advisory lock on its name, released
with its connection even when the process is killed. A second run of the same study therefore
either waits its turn (refused, with the reason) or finds no one running it: then every trial still
marked RUNNING belongs to a process that died, and is marked FAIL and queued again with the same
values, so it is neither lost nor counted twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import optuna
import psycopg
from optuna.trial import FrozenTrial, TrialState
from psycopg import sql

from pipelines.config import LanegraphConfig
from pipelines.errors import InputError
from pipelines.evaluation.dataset import database_suffix
from pipelines.resources.database import connect
from pipelines.tuning.space import TuningSpace

STUDY_SCHEMA = "optuna"
# What `--trials N` counts: finished trials, whichever way a constraint judged them.
FINISHED = (TrialState.COMPLETE,)
CONSTRAINTS_ATTR = "constraints"
RETRY_ATTR = "retry_of"
CURRENT_ATTR = "current_settings"

optuna.logging.set_verbosity(optuna.logging.WARNING)


def study_name(dataset_name: str, space: TuningSpace, base: LanegraphConfig) -> str:
    retrieval = base.model_dump_json(include={"plan", "settings", "lanes"})
    started_from = hashlib.sha256(retrieval.encode()).hexdigest()[:8]
    return f"{database_suffix(dataset_name)}-{space.fingerprint()}-{started_from}"


@contextmanager
def opened_storage(url: str) -> Iterator[optuna.storages.RDBStorage]:
    """The study storage, its pooled connections closed at the end (the engine reconnects if a
    study handle is read later, as the asset's plots do)."""
    storage = storage_for(url)
    try:
        yield storage
    finally:
        storage.engine.dispose()


def storage_for(url: str) -> optuna.storages.RDBStorage:
    """Optuna's RDB storage in the `optuna` schema of the database at `url` (psycopg 3 driver)."""
    with connect(url, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(STUDY_SCHEMA)))
    conninfo = psycopg.conninfo.make_conninfo(url, options=f"-c search_path={STUDY_SCHEMA}")
    return optuna.storages.RDBStorage(
        "postgresql+psycopg://",
        # The URL may be a libpq key=value string (the embedded server's socket): psycopg connects
        # from it as the rest of lanegraph does, and SQLAlchemy only drives the connections.
        engine_kwargs={"creator": lambda: psycopg.connect(conninfo)},
    )


@contextmanager
def study_lock(url: str, name: str) -> Iterator[None]:
    """Held while this process runs the study; refused when another process holds it."""
    with connect(url, autocommit=True) as connection:
        key = f"lanegraph tune {name}"
        [(locked,)] = connection.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)).fetchall()
        if not locked:
            raise InputError(f"study {name}: another lanegraph tune is running it; wait for it to finish or stop it")
        try:
            yield
        finally:
            connection.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))


def recover_interrupted(study: optuna.Study) -> list[FrozenTrial]:
    """Trials a killed run left RUNNING: marked FAIL, their values queued again. Only call with
    the study's lock held (no live process is running them)."""
    interrupted = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    for trial in interrupted:
        study.tell(trial.number, state=TrialState.FAIL)
        if trial.params:
            # A retry of a retry still names the trial first interrupted.
            first = trial.user_attrs.get(RETRY_ATTR, trial.number)
            study.enqueue_trial(trial.params, user_attrs={RETRY_ATTR: first}, skip_if_exists=False)
    return interrupted


def constraint_violations(trial: FrozenTrial) -> list[float]:
    """Optuna's convention: each value at most 0 when the constraint holds."""
    return list(trial.user_attrs.get(CONSTRAINTS_ATTR, []))


def feasible(trial: FrozenTrial) -> bool:
    return all(value <= 0 for value in constraint_violations(trial))


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    """The best finished trial that meets the constraints (ties: the earliest)."""
    finished = [trial for trial in study.get_trials(deepcopy=False, states=FINISHED) if feasible(trial)]
    if not finished:
        return None
    return max(finished, key=lambda trial: (trial.value, -trial.number))


def open_study(storage: optuna.storages.RDBStorage, name: str, space: TuningSpace) -> optuna.Study:
    sampler = optuna.samplers.TPESampler(
        seed=space.seed,
        constraints_func=constraint_violations if space.constraints.find_p50_ms is not None else None,
    )
    return optuna.create_study(study_name=name, storage=storage, sampler=sampler, direction="maximize", load_if_exists=True)
