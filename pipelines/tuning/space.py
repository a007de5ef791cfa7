"""The search space of a tuning study, declared in YAML and loaded as strictly as lanes.yaml.

A space names the retrieval settings to search (a range, `low`/`high` with `step` or `log`, or a
list of `choices`), the plan toggles to try (always `choices`: each distinct plan is its own
statement, compiled once), the objective on the train split (one metric, or a weighted mix) and
optional constraints (find's p50 latency at most N ms). Every key is checked against the settings
models: an unknown setting, a bound the setting does not accept or a range the wrong way round is
an error naming the file, the line and the key.

    version: 1
    objective: {recall@5: 0.5, answer@budget: 0.5}
    constraints: {find_p50_ms: 60}
    settings:
      dense_weight: {low: 0.0, high: 1.0, step: 0.05}
      rrf_k: {low: 10, high: 200, log: true}
    plan:
      bridges: {choices: [true, false]}
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

import optuna
import pydantic
from pydantic import Field
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from pipelines.config import LanegraphConfig
from pipelines.errors import ConfigError
from pipelines.evaluation.answers import ANSWER_METRIC
from pipelines.evaluation.metrics import NDCG_CUTOFF
from pipelines.lanes_config import INTEGER_SETTINGS, SETTING_NAMES, Plan, Settings
from pipelines.strict_yaml import StrictModel, read_settings_text, validated_yaml

# The space lanegraph ships: what the shipped lanes.yaml was hand-tuned over, and what most moves
# recall on a corpus of its own (how dense and lexical ranks fuse, BM25's saturation, the bridge hop).
DEFAULT_SPACE = Path(__file__).with_name("space.yaml")
# Plan fields a space may toggle: every field but the lane order (a list, not a toggle).
PLAN_TOGGLES = frozenset(name for name in Plan.model_fields if name != "order")
RECALL = re.compile(r"recall@([1-9][0-9]*)")
Scalar = bool | int | float | str


def metric_is_known(metric: str) -> bool:
    """Metrics the evaluation computes for any cutoff: recall@k, ndcg@10, mrr and answer@budget."""
    return bool(RECALL.fullmatch(metric)) or metric in {f"ndcg@{NDCG_CUTOFF}", "mrr", ANSWER_METRIC}


def _invalid(message: str) -> PydanticCustomError:
    return PydanticCustomError("tuning_space", message)


class Dimension(StrictModel):
    """One searched value: a range (`low`, `high`, optional `step` or `log`) or `choices`."""

    low: int | float | None = None
    high: int | float | None = None
    step: int | float | None = Field(default=None, gt=0)
    log: bool = False
    choices: list[Scalar] | None = Field(default=None, min_length=1)

    @pydantic.model_validator(mode="after")
    def _range_or_choices(self) -> Dimension:
        ranged = self.low is not None or self.high is not None
        if self.choices is not None:
            if ranged or self.step is not None or self.log:
                raise _invalid("give either choices or a range (low, high, step or log), not both")
            if len(set(map(json.dumps, self.choices))) != len(self.choices):
                raise _invalid("choices lists a value twice")
            return self
        if self.low is None or self.high is None:
            raise _invalid("a range needs both low and high (or give choices)")
        if self.low >= self.high:
            raise _invalid(f"low ({self.low}) must be below high ({self.high})")
        if self.log and self.step is not None:
            raise _invalid("a range is searched on a log scale or in steps, not both")
        if self.log and self.low <= 0:
            raise _invalid("a log-scale range needs low above 0")
        return self

    def values(self) -> list[Scalar]:
        """The values to validate against the setting: the choices, or the range's ends."""
        return list(self.choices) if self.choices is not None else [self.low, self.high]  # type: ignore[list-item]

    def suggest(self, trial: optuna.Trial, name: str, integer: bool) -> Scalar:
        if self.choices is not None:
            choice = trial.suggest_categorical(name, self.choices)
            assert choice is not None  # choices are scalars: YAML's null is not one
            return choice
        assert self.low is not None and self.high is not None
        if integer:
            return trial.suggest_int(name, int(self.low), int(self.high), step=int(self.step or 1), log=self.log)
        return trial.suggest_float(name, float(self.low), float(self.high), step=self.step, log=self.log)


class Constraints(StrictModel):
    find_p50_ms: float | None = Field(default=None, gt=0, description="Find's median latency on the train questions, at most this.")


class TuningSpace(StrictModel):
    version: Literal[1]
    objective: str | dict[str, float] = Field(
        description="A metric (recall@5, ndcg@10, mrr, answer@budget) or metrics with weights, maximised on the train split."
    )
    constraints: Constraints = Constraints()
    settings: dict[str, Dimension] = Field(default_factory=dict)
    plan: dict[str, Dimension] = Field(default_factory=dict)
    seed: int = Field(default=42, description="The TPE sampler's seed: the same space, data and seed give the same study.")

    @pydantic.model_validator(mode="after")
    def _names_and_values_exist(self) -> TuningSpace:
        problems: list[InitErrorDetails] = []

        def problem(location: tuple[str | int, ...], value: object, message: str) -> None:
            problems.append(InitErrorDetails(type=_invalid(message), loc=location, input=value))

        weights = self.weights
        for metric, weight in weights.items():
            where: tuple[str, ...] = ("objective",) if isinstance(self.objective, str) else ("objective", metric)
            if not metric_is_known(metric):
                problem(where, metric, f"unknown metric {metric!r}; use recall@K, ndcg@{NDCG_CUTOFF}, mrr or {ANSWER_METRIC}")
            elif weight <= 0:
                problem(where, weight, "a metric's weight must be above 0")
        if not weights:
            problem(("objective",), self.objective, "name at least one metric")
        if not self.settings and not self.plan:
            problem(("settings",), {}, "the space searches nothing: give at least one setting or plan toggle")
        for name, dimension in self.settings.items():
            if name not in SETTING_NAMES:
                problem(("settings", name), name, f"unknown setting {name!r} (see lanes.yaml's settings)")
                continue
            integer = name in INTEGER_SETTINGS
            if integer and dimension.step is not None and not isinstance(dimension.step, int):
                problem(("settings", name, "step"), dimension.step, f"{name} is an integer setting; its step must be an integer")
                continue
            for value in dimension.values():
                if integer and (isinstance(value, bool) or not isinstance(value, int)):
                    problem(("settings", name), value, f"{name} is an integer setting; {value!r} is not an integer")
                    break
                try:
                    Settings.model_validate({name: float(value) if not integer and isinstance(value, int) else value})
                except ValidationError as error:
                    problem(("settings", name), value, f"{value!r} is not a valid {name}: {error.errors()[0]['msg']}")
                    break
        for name, dimension in self.plan.items():
            if name not in PLAN_TOGGLES:
                problem(("plan", name), name, f"unknown plan toggle {name!r}; toggles are: {', '.join(sorted(PLAN_TOGGLES))}")
                continue
            if dimension.choices is None:
                problem(("plan", name), name, "a plan toggle is searched over choices (each plan is its own statement)")
                continue
            for value in dimension.choices:
                try:
                    Plan.model_validate({name: value})
                except ValidationError as error:
                    problem(("plan", name, "choices"), value, f"{value!r} is not a valid plan.{name}: {error.errors()[0]['msg']}")
                    break
        if problems:
            raise ValidationError.from_exception_data("TuningSpace", problems)
        return self

    @property
    def weights(self) -> dict[str, float]:
        """The objective as metric → weight (a single metric weighs 1)."""
        return {self.objective: 1.0} if isinstance(self.objective, str) else dict(self.objective)

    @property
    def objective_label(self) -> str:
        weights = self.weights
        if len(weights) == 1:
            return next(iter(weights))
        return " + ".join(f"{weight:g}·{metric}" for metric, weight in weights.items())

    def cutoffs(self) -> tuple[int, ...]:
        """Recall cutoffs the evaluation must compute: the objective's, else the report's default."""
        return tuple(sorted({int(match.group(1)) for metric in self.weights if (match := RECALL.fullmatch(metric))})) or (5,)

    def fingerprint(self) -> str:
        """Identifies the space in the study's name: a changed space is a new study, never mixed
        into the trials of another."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:10]

    def suggest(self, trial: optuna.Trial, base: LanegraphConfig) -> LanegraphConfig:
        """The base configuration with the trial's values in place."""
        settings = {
            name: dimension.suggest(trial, name, name in INTEGER_SETTINGS) for name, dimension in self.settings.items()
        }
        plan = {name: dimension.suggest(trial, f"plan.{name}", integer=True) for name, dimension in self.plan.items()}
        return apply_params(base, settings, plan)

    def params_of(self, config: LanegraphConfig) -> dict[str, Scalar] | None:
        """The configuration's values as trial parameters, or None when one falls outside the space
        (then the current settings cannot be enqueued as a trial)."""
        params: dict[str, Scalar] = {}
        for name, dimension in self.settings.items():
            value = getattr(config.settings, name)
            if not _within(dimension, value):
                return None
            params[name] = value
        for name, dimension in self.plan.items():
            value = getattr(config.plan, name)
            if not _within(dimension, value):
                return None
            params[f"plan.{name}"] = value
        return params


def _within(dimension: Dimension, value: Scalar) -> bool:
    if dimension.choices is not None:
        return value in dimension.choices
    assert dimension.low is not None and dimension.high is not None
    if isinstance(value, bool) or not isinstance(value, int | float) or not dimension.low <= value <= dimension.high:
        return False
    if dimension.step is None:
        return True
    steps = (value - dimension.low) / dimension.step
    return abs(steps - round(steps)) < 1e-9


def _clean(value: Scalar) -> Scalar:
    # A stepped float carries the step's binary noise (0.30000000000000004): the setting is 0.3.
    return float(f"{value:.10g}") if isinstance(value, float) else value


def split_params(params: dict[str, Scalar]) -> tuple[dict[str, Scalar], dict[str, Scalar]]:
    """A trial's parameters as (settings, plan toggles), floats as a person would write them."""
    settings = {name: _clean(value) for name, value in params.items() if not name.startswith("plan.")}
    plan = {name.removeprefix("plan."): _clean(value) for name, value in params.items() if name.startswith("plan.")}
    return settings, plan


def apply_params(base: LanegraphConfig, settings: dict[str, Scalar], plan: dict[str, Scalar]) -> LanegraphConfig:
    """`base` with these settings and plan toggles, validated as lanes.yaml would be. Lanes and
    their own overrides stay as they are: a lane that overrides a setting keeps its value."""
    floats = {name: float(value) if name not in INTEGER_SETTINGS and isinstance(value, int) else value for name, value in settings.items()}
    try:
        tuned_settings = Settings.model_validate({**base.settings.model_dump(), **floats})
        tuned_plan = Plan.model_validate({**base.plan.model_dump(), **plan})
    except ValidationError as error:
        raise ConfigError(f"a trial's values are not valid settings: {error.errors()[0]['msg']}") from None
    return base.model_copy(update={"settings": tuned_settings, "plan": tuned_plan})


def load_space(path: Path) -> TuningSpace:
    """Load and validate a space file; every problem names the file, line and key."""
    return validated_yaml(TuningSpace, read_settings_text(path), str(path))
