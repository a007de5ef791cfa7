"""Studies in PostgreSQL: a trial a killed run left RUNNING is failed and queued again, once, and
two runs of one study never overlap."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import optuna
import pytest
from optuna.trial import TrialState

from pipelines.errors import InputError
from pipelines.tuning.space import TuningSpace
from pipelines.tuning.study import CONSTRAINTS_ATTR, RETRY_ATTR, STUDY_SCHEMA, best_trial, open_study, recover_interrupted, storage_for, study_lock
from pipelines.resources.database import connect

SPACE = TuningSpace.model_validate({"version": 1, "objective": "mrr", "settings": {"rrf_k": {"low": 1, "high": 100}}})


def score(trial: optuna.Trial) -> float:
    return trial.suggest_int("rrf_k", 1, 100) / 100


@pytest.fixture()
def url(make_schema_url: Callable[[], str]) -> str:
    return make_schema_url()


def test_an_interrupted_trial_is_failed_and_run_again_with_the_same_values(url: str) -> None:
    name = f"test-{uuid.uuid4().hex[:8]}"
    storage = storage_for(url)
    study = open_study(storage, name, SPACE)
    study.optimize(score, n_trials=1)
    # A run killed in the middle of its second trial: the trial stays RUNNING in the database.
    abandoned = study.ask()
    abandoned.suggest_int("rrf_k", 1, 100)

    resumed = open_study(storage_for(url), name, SPACE)
    with study_lock(url, name):
        assert [trial.number for trial in recover_interrupted(resumed)] == [abandoned.number]
        assert recover_interrupted(resumed) == []
        resumed.optimize(score, n_trials=2)

    trials = resumed.get_trials()
    assert [trial.number for trial in trials] == [0, 1, 2, 3]
    assert [trial.state for trial in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE, TrialState.COMPLETE]
    retry = trials[2]
    assert retry.params == abandoned.params and retry.user_attrs[RETRY_ATTR] == abandoned.number
    assert best_trial(resumed) is not None
    # The study's tables are Optuna's own, in their own schema.
    with connect(url) as connection:
        [(schema,)] = connection.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = 'studies'").fetchall()
    assert schema == STUDY_SCHEMA


def test_a_study_another_process_runs_is_refused(url: str) -> None:
    with study_lock(url, "one-study"):
        with pytest.raises(InputError, match="another lanegraph tune is running it"):
            with study_lock(url, "one-study"):
                pass
        with study_lock(url, "another-study"):
            pass
    with study_lock(url, "one-study"):
        pass


def test_the_best_trial_is_the_best_that_meets_the_constraints(url: str) -> None:
    study = open_study(storage_for(url), f"test-{uuid.uuid4().hex[:8]}", SPACE)
    distribution = {"rrf_k": optuna.distributions.IntDistribution(1, 100)}
    for value, p50_over_limit in ((0.9, 12.0), (0.7, -3.0), (0.8, 0.0)):
        study.add_trial(optuna.trial.create_trial(
            params={"rrf_k": int(value * 100)}, distributions=distribution, value=value,
            user_attrs={CONSTRAINTS_ATTR: [p50_over_limit]},
        ))
    best = best_trial(study)
    assert best is not None and best.value == 0.8
