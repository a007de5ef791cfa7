"""The search space file: the shipped one loads, and every mistake names the file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.errors import ConfigError
from pipelines.tuning.space import DEFAULT_SPACE, apply_params, load_space, split_params
from tests import REPOSITORY

VALID = """\
version: 1
objective: {recall@5: 0.7, mrr: 0.3}
constraints: {find_p50_ms: 80}
settings:
  dense_weight: {low: 0.0, high: 1.0, step: 0.1}
  rrf_k: {low: 10, high: 200, log: true}
  find_per_document: {choices: [1, 2, 3]}
plan:
  bridges: {choices: [true, false]}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


def test_the_shipped_space_loads_and_contains_the_shipped_settings():
    space = load_space(DEFAULT_SPACE)
    base = load_config(REPOSITORY / "lanes.yaml")
    assert space.weights == {"recall@5": 0.5, "answer@budget": 0.5}
    # The current settings are a point of the space, so the first trial can score them.
    assert space.params_of(base) is not None


def test_a_valid_space_reads_every_part(tmp_path):
    space = load_space(write(tmp_path, VALID))
    assert space.weights == {"recall@5": 0.7, "mrr": 0.3}
    assert space.cutoffs() == (5,)
    assert space.constraints.find_p50_ms == 80
    assert set(space.settings) == {"dense_weight", "rrf_k", "find_per_document"}
    assert space.plan["bridges"].choices == [True, False]


def test_trial_values_apply_to_settings_and_plan_and_leave_lane_overrides_alone():
    base = load_config(REPOSITORY / "lanes.yaml")
    settings, plan = split_params({"dense_weight": 0.45000000000000007, "rrf_k": 30, "plan.bridges": False})
    assert settings == {"dense_weight": 0.45, "rrf_k": 30} and plan == {"bridges": False}
    tuned = apply_params(base, settings, plan)
    assert (tuned.settings.dense_weight, tuned.settings.rrf_k, tuned.plan.bridges) == (0.45, 30, False)
    assert tuned.lanes == base.lanes
    assert tuned.settings.bm25_k1 == base.settings.bm25_k1


MISTAKES = {
    "an unknown setting": ("  rrf_k: {low: 10, high: 200, log: true}", "  rrf_kk: {low: 10, high: 200}", 6, "settings.rrf_kk", "unknown setting 'rrf_kk'"),
    "low above high": ("dense_weight: {low: 0.0, high: 1.0, step: 0.1}", "dense_weight: {low: 0.9, high: 0.1}", 5, "settings.dense_weight", "low (0.9) must be below high (0.1)"),
    "a float for an integer setting": ("rrf_k: {low: 10, high: 200, log: true}", "rrf_k: {low: 10.5, high: 200}", 6, "settings.rrf_k", "integer setting"),
    "a bound the setting refuses": ("rrf_k: {low: 10, high: 200, log: true}", "rrf_k: {low: 0, high: 200}", 6, "settings.rrf_k", "not a valid rrf_k"),
    "a range and choices": ("find_per_document: {choices: [1, 2, 3]}", "find_per_document: {choices: [1, 2], low: 1, high: 3}", 7, "settings.find_per_document", "either choices or a range"),
    "a plan toggle as a range": ("bridges: {choices: [true, false]}", "bridges: {low: 0, high: 1}", 9, "plan.bridges", "searched over choices"),
    "an unknown plan toggle": ("bridges: {choices: [true, false]}", "bridgez: {choices: [true, false]}", 9, "plan.bridgez", "unknown plan toggle"),
    "an unknown metric": ("objective: {recall@5: 0.7, mrr: 0.3}", "objective: {recall@5: 0.7, mmr: 0.3}", 2, "objective.mmr", "unknown metric 'mmr'"),
    "an unknown key": ("constraints: {find_p50_ms: 80}", "constraints: {find_p95_ms: 80}", 3, "constraints.find_p95_ms", "unknown key"),
    "log with step": ("rrf_k: {low: 10, high: 200, log: true}", "rrf_k: {low: 10, high: 200, log: true, step: 5}", 6, "settings.rrf_k", "log scale or in steps"),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_a_mistake_names_file_line_and_key(tmp_path, case):
    old, new, line, key, message = MISTAKES[case]
    assert old in VALID
    path = write(tmp_path, VALID.replace(old, new))
    with pytest.raises(ConfigError) as raised:
        load_space(path)
    text = str(raised.value)
    assert text.startswith(f"{path}:{line}: {key}: "), text
    assert message in text


def test_duplicate_keys_and_an_empty_space_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r":6: duplicate key 'settings.dense_weight'"):
        load_space(write(tmp_path, VALID.replace("  rrf_k:", "  dense_weight:")))
    with pytest.raises(ConfigError, match="searches nothing"):
        load_space(write(tmp_path, "version: 1\nobjective: mrr\n"))
