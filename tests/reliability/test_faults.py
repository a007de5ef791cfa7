"""Every fault a user can meet ends as one line on stderr and exit status 2, never a traceback.

Database errors in the middle of a find (a terminated backend, a statement timeout, a server that
went away), values beyond what the find statement can bind (on the command line or in lanes.yaml,
which `check` must then refuse), `check` with every plan toggle on a tiny corpus, `explain` on any
question, and `eval` on datasets that are odd but not empty.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import psycopg
import pytest

import pipelines.read.find as find_module
from pipelines.config import load_config
from pipelines.errors import ConfigError, InputError
from pipelines.evaluation.dataset import load_dataset
from pipelines.evaluation.metrics import paired_p_value
from pipelines.resources.database import Database
from tests.reliability.test_bad_input import assert_one_line, cli_database, replaced, run_cli

__all__ = ["cli_database"]

INT8_MAX = 2**63 - 1


@pytest.fixture()
def terminated_mid_find(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server ends find's backend just before its statement runs (as pg_terminate_backend or a
    restart does)."""
    original = find_module.run_statement

    def terminating(connection: psycopg.Connection, *args: object, **kwargs: object) -> object:
        connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return original(connection, *args, **kwargs)

    monkeypatch.setattr(find_module, "run_statement", terminating)


def test_a_backend_terminated_mid_find_is_one_line_with_a_retry_hint(
    cli_database: Database, terminated_mid_find: None, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, stderr = run_cli(capsys, "find", "Heron", "--trace")
    assert status == 2
    assert_one_line(stderr, "lost the connection to PostgreSQL", "run the same command again")


def test_a_statement_timeout_mid_find_is_one_line(
    cli_database: Database, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    original = find_module.run_statement

    def timing_out(connection: psycopg.Connection, *args: object, **kwargs: object) -> object:
        connection.execute("SET LOCAL statement_timeout = '1ms'")
        connection.execute("SELECT pg_sleep(0.05)")
        return original(connection, *args, **kwargs)

    monkeypatch.setattr(find_module, "run_statement", timing_out)
    status, _, stderr = run_cli(capsys, "find", "Heron", "--trace")
    assert status == 2
    assert_one_line(stderr, "statement timeout")


@pytest.mark.parametrize("value", [str(INT8_MAX), str(2**31), str(10**30)])
def test_out_of_range_k_is_one_line_and_a_huge_budget_is_no_limit(
    cli_database: Database, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    status, _, stderr = run_cli(capsys, "find", "Heron", "--k", value, "--trace")
    assert status == 2
    assert_one_line(stderr, "k must be at most")
    # The budget is no bind: find packs evidence into it in Python.
    status, _, stderr = run_cli(capsys, "find", "Heron", "--budget", value, "--trace")
    assert status == 0, stderr


@pytest.mark.parametrize(
    "old, new, fragment",
    [
        ("  k: 8", f"  k: {INT8_MAX}", "settings.k"),
        ("  k: 8", "  k: 2147483648", "settings.k"),
        ("  raptor_k: 2", f"  raptor_k: {2**40}", "settings.raptor_k"),
        ("  rrf_k: 60", f"  rrf_k: {INT8_MAX}", "settings.rrf_k"),
        ("  dense_weight: 0.3", "  dense_weight: .inf", "settings.dense_weight"),
        ("  bm25_k1: 1.2", "  bm25_k1: .nan", "settings.bm25_k1"),
        ("  bridge_weight: 0.5", "  bridge_weight: 1.0e+308", "settings.bridge_weight"),
    ],
)
def test_settings_beyond_their_bind_are_refused_when_lanes_yaml_is_read(
    tmp_path: Path, old: str, new: str, fragment: str
) -> None:
    path = tmp_path / "lanes.yaml"
    path.write_text(replaced(old, new))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert_one_line(str(raised.value), str(path), fragment)


def test_a_lane_limit_that_overflows_its_bind_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lanes.yaml"
    path.write_text(replaced("  k: 8", "  k: 1000000").replace("  fact_candidate_factor: 3", "  fact_candidate_factor: 1000000"))
    config = load_config(path)  # each value is in range ...
    limit = config.settings.k * config.settings.fact_candidate_factor
    assert limit <= INT8_MAX  # ... and so is every product of two or three of them


@pytest.mark.parametrize("question", ["Heron\x00", "Heron \udcff", "", "x" * 100_001])
def test_explain_refuses_a_question_find_refuses_in_one_line(
    cli_database: Database, capsys: pytest.CaptureFixture[str], question: str
) -> None:
    status, _, stderr = run_cli(capsys, "explain", question)
    assert status == 2
    assert_one_line(stderr, "question")


def test_check_with_every_plan_toggle_on_a_tiny_corpus_reports(
    cli_database: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lanes = tmp_path / "lanes.yaml"
    text = replaced("  entity_catalog: false", "  entity_catalog: true")
    for toggle in ("profiles", "communities", "raptor", "neighbors", "fuzzy_mentions"):
        text = text.replace(f"  {toggle}: false", f"  {toggle}: true", 1)
    lanes.write_text(text)
    status, out, stderr = run_cli(capsys, "check", "--lanes", str(lanes))
    assert "Traceback" not in stderr and "KeyError" not in stderr, stderr
    assert status in (0, 1, 2), stderr
    assert out.strip() or stderr.strip()


# (case, dataset file bytes, fragment of the one-line error)
BAD_DATASETS: list[tuple[str, bytes, str]] = [
    ("non-UTF-8", b'{"name": "caf\xe9"}', "not valid UTF-8"),
    ("deeply nested", b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    ("NUL in a question", json.dumps({
        "name": "n", "corpus": [{"id": "p", "title": "t", "text": "x"}],
        "queries": [{"id": "q", "text": "Where\u0000?", "gold_ids": ["p"]}],
    }).encode(), "queries[0].text"),
    ("lone surrogate in a passage", json.dumps({
        "name": "n", "corpus": [{"id": "p", "title": "t", "text": "x\ud800"}],
        "queries": [{"id": "q", "text": "Where?", "gold_ids": ["p"]}],
    }).encode(), "corpus[0].text"),
]


@pytest.mark.parametrize("case, content, fragment", BAD_DATASETS, ids=[case for case, _, _ in BAD_DATASETS])
def test_bad_datasets_are_one_line_naming_the_file(tmp_path: Path, case: str, content: bytes, fragment: str) -> None:
    path = tmp_path / "dataset.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as raised:
        load_dataset(path)
    assert_one_line(str(raised.value), str(path), fragment)


def test_eval_on_a_one_question_dataset_compares_arms_without_a_test_statistic() -> None:
    """A paired randomization test needs two questions; with one, either labelling is as likely."""
    assert paired_p_value(np.array([1.0]), np.array([0.0])) == 1.0
    assert 0.0 <= paired_p_value(np.array([1.0, 1.0]), np.array([0.0, 0.0])) <= 1.0
