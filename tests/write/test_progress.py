"""Progress of long steps: lines with counts, rate and time left, paced for the run log, and a real
ingest through the command line that shows them on stderr and in Dagster's run log."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from pipelines.cli import main
from pipelines.write import progress
from pipelines.write.progress import (
    EMBED_SLICE,
    MAX_SILENT_SECONDS,
    MIN_LOG_SECONDS,
    StepProgress,
    embed_showing_progress,
    listening,
    step_progress,
)
from tests import REPOSITORY

DEMO = REPOSITORY / "pipelines" / "demo_corpus" / "documents"
# A step's progress line: "<step>: <done>/<total> <unit>" and, once anything is done, a rate.
COUNTS = re.compile(r"^(?P<step>[\w ]+): (?P<done>[\d,]+)/(?P<total>[\d,]+) (?P<unit>[^(]+?)(?: in .+)? \((?P<rest>.*)\)$")
RATE = re.compile(r"[\d.,]+/(s|min)")


class Clock:
    """Stands in for time.monotonic, so pacing is tested without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    return clock


def logged_while(clock: Clock, total: int, seconds_per_unit: float) -> list[tuple[float, str]]:
    """(time, line) of every line the step logs while its units finish one by one."""
    lines: list[tuple[float, str]] = []
    advance = step_progress("step", total, "units", lambda line: lines.append((clock.now, line)))
    for done in range(1, total + 1):
        clock.now += seconds_per_unit
        advance(done)
    return lines


def test_a_line_has_counts_share_rate_and_time_left() -> None:
    assert StepProgress("chunk_embeddings", 0, 2000, "chunks", 0.0, True).line() == "chunk_embeddings: 0/2,000 chunks"
    assert StepProgress("chunk_embeddings", 500, 2000, "chunks", 20.0, True).line() == (
        "chunk_embeddings: 500/2,000 chunks (25%, 25/s, about 1 min 00 s left)"
    )
    assert StepProgress("entities_and_facts", 30, 600, "documents", 60.0, True).line() == (
        "entities_and_facts: 30/600 documents (5%, 30.0/min, about 19 min 00 s left)"
    )
    assert StepProgress("communities", 40, 40, "communities summarised", 8.0, True).line() == (
        "communities: 40/40 communities summarised in 8.0 s (5.0/s)"
    )


def test_a_fast_step_logs_its_start_and_end_only(clock: Clock) -> None:
    lines = logged_while(clock, 10_000, 0.0001)
    assert [line for _, line in lines] == ["step: 0/10,000 units", "step: 10,000/10,000 units in 1.0 s (10,000/s)"]


def test_a_slow_step_logs_every_tenth_at_most_every_few_seconds(clock: Clock) -> None:
    lines = logged_while(clock, 100, 1.0)
    assert [line.split(" (")[0] for _, line in lines] == [
        "step: 0/100 units", *(f"step: {done}/100 units" for done in range(10, 100, 10)), "step: 100/100 units in 1 min 40 s"
    ]
    short = logged_while(clock, 1000, 0.005)
    gaps = [later - earlier for (earlier, _), (later, _) in zip(short, short[1:])]
    assert all(gap >= MIN_LOG_SECONDS for gap in gaps[:-1]), "never two lines within a couple of seconds"


def test_a_very_slow_step_logs_at_least_every_half_minute(clock: Clock) -> None:
    lines = logged_while(clock, 1000, 1.0)
    gaps = [later - earlier for (earlier, _), (later, _) in zip(lines, lines[1:])]
    assert max(gaps) <= MAX_SILENT_SECONDS + 1
    assert len(lines) < 1000 / MAX_SILENT_SECONDS + 12


def test_listeners_see_every_update_and_a_step_with_nothing_to_do_says_nothing(clock: Clock) -> None:
    seen: list[StepProgress] = []
    logged: list[str] = []
    with listening(seen.append):
        advance = step_progress("step", 3, "units", logged.append)
        for done in (1, 2, 3):
            advance(done)
        step_progress("idle", 0, "units", logged.append)
    assert [update.done for update in seen] == [0, 1, 2, 3]
    assert [update.line() for update in seen if update.logged] == logged


@pytest.mark.slow
def test_ingest_shows_progress_with_counts_and_rate_on_stderr_and_in_the_run_log(
    tmp_path: Path, make_schema_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("project-heron.md", "project-lantern.md", "people-and-teams.md", "mentorship-programme.md"):
        shutil.copy(DEMO / name, corpus / name)
    # A Dagster instance of its own: the session's instance holds other tests' partitions, whose
    # sources this schema has never registered, and ingest would report them as skipped.
    home = tmp_path / "dagster"
    monkeypatch.setenv("DATABASE_URL", make_schema_url())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    # The command line's entry point in this process: stderr is not a terminal here either, so
    # the paced lines are printed, and the process start a subprocess pays proves nothing more.
    status = main(["ingest", str(corpus), "--json"])
    result = capsys.readouterr()
    assert status == 0, result.err[-3000:]
    report = json.loads(result.out)
    assert report["assets"] and not report["skipped"], result.out

    printed = [COUNTS.match(line) for line in result.err.splitlines()]
    finished = {(match["step"], match["unit"]) for match in printed if match and match["done"] == match["total"]}
    assert all(RATE.search(match["rest"]) for match in printed if match)
    for step, unit in [
        ("documents", "sources"), ("chunks", "documents"), ("chunk_embeddings", "chunks"),
        ("entities_and_facts", "documents"),
        ("entity_graph", "fact statements embedded"), ("entity_graph", "entities embedded"),
        ("communities", "communities compared with their sources"), ("entity_profiles", "entities compared with their facts"),
        ("raptor_levels level 1", "clusters of"),
    ]:
        assert any(name == step and found.startswith(unit) for name, found in finished), f"no finished {step}: {unit}"

    run_ids = report["run_ids"]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        messages = [entry.user_message for run_id in run_ids for entry in instance.all_logs(run_id) if not entry.is_dagster_event]
    in_run_log = [COUNTS.match(message) for message in messages]
    assert {match["step"] for match in in_run_log if match} >= {
        "documents", "chunks", "chunk_embeddings", "entities_and_facts", "entity_graph", "communities",
        "entity_profiles", "raptor_levels level 1",
    }
    assert all(RATE.search(match["rest"]) for match in in_run_log if match)


def test_embedding_slices_hold_texts_of_one_length_and_vectors_come_back_in_the_given_order() -> None:
    texts = [("word " * (index % 7 + 1)).strip() + f" {index}" for index in range(3 * EMBED_SLICE)]
    slices: list[list[str]] = []

    def embed(batch):
        slices.append(list(batch))
        return np.array([[len(text), texts.index(text)] for text in batch], dtype=np.float32)

    done: list[int] = []
    vectors = embed_showing_progress(embed, texts, done.append, done_before=10)

    assert vectors.tolist() == [[len(text), index] for index, text in enumerate(texts)]
    lengths = [len(text) for batch in slices for text in batch]
    assert lengths == sorted(lengths, reverse=True)
    assert done == [10 + EMBED_SLICE, 10 + 2 * EMBED_SLICE, 10 + 3 * EMBED_SLICE]
