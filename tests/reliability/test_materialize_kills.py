"""`lanegraph materialize` and `materialize --full-graph` killed anywhere, then run again, leave exactly
what an uninterrupted run leaves: the same tables and the same answers to a fixed set of finds.

Folder A is ingested; for plain `materialize`, folder B is then ingested without the graph (`ingest
--no-graph`), so the materialization has graph work to do. The run is SIGKILLed before its N-th SQL
statement, for N spread over the whole run, and run again. Tables (per-table fingerprints, timestamps
excluded) and finds must equal those of the clean build. LANEGRAPH_MATERIALIZE_KILLS sets how many
kill points per kind of run (default: one kill of `--full-graph` alone); docs/reliability.md gives a
longer run's figures.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.read.find import find
from pipelines.resources.database import Database
from tests.reliability.tenancy import HashedEmbedder
from tests.reliability.writes import Target, WriteWorker, differing_tables, fresh_home, make_corpus, second_folder

pytestmark = pytest.mark.slow

# Kill points per kind of run. By default only a full-graph run is killed, once (it deletes and
# rebuilds every graph row, the most a kill can cut short), to keep the suite's time.
CHOSEN_KILLS = os.environ.get("LANEGRAPH_MATERIALIZE_KILLS")
QUESTIONS = (
    "Who leads Project Heron?",
    "Which supplier provides the batteries?",
    "Mara Okafor Rotterdam yard lab",
    "battery recall lot 7",
    "teams and the people in them",
    "What changed in the project this year?",
)
RUNS = {
    "materialize": {"command": "materialize"},
    "materialize --full-graph": {"command": "materialize", "full_graph": True},
}
KILLS = {run: int(CHOSEN_KILLS) if CHOSEN_KILLS else int(run == "materialize --full-graph") for run in RUNS}

Answers = dict[str, list[tuple[str, str, str]]]


def answers(url: str) -> Answers:
    """Each question's candidates in find's order: lane, evidence id, line."""
    config = load_config()
    embedder = HashedEmbedder(config.pipeline.embedding.dimension)
    with Database(url) as database:
        return {
            question: [
                (candidate.lane, candidate.evidence_id, candidate.line)
                for candidate in find(database, question, config=config, embedder=embedder).candidates
            ]
            for question in QUESTIONS
        }


@pytest.fixture(scope="module")
def folders(write_scratch: Path) -> tuple[Path, Path]:
    return make_corpus(write_scratch / "materialize-a"), second_folder(write_scratch / "materialize-b")


def prepared(worker: WriteWorker, folders: tuple[Path, Path], make_schema_url: Callable[[], str], run: str) -> Target:
    """A target as the materialization finds it: A ingested, and for plain materialize B without the graph."""
    target = Target(make_schema_url(), fresh_home())
    assert worker.run(target, folders[0])[0] == 0, worker.log_tail()
    if run == "materialize":
        assert worker.run(target, folders[1], graph=False)[0] == 0, worker.log_tail()
    return target


@pytest.mark.parametrize("run", list(RUNS))
def test_materialize_killed_anywhere_then_rerun_equals_a_clean_build(
    run: str, worker: WriteWorker, folders: tuple[Path, Path], make_schema_url: Callable[[], str]
) -> None:
    if not KILLS[run]:
        pytest.skip(f"{run}: set LANEGRAPH_MATERIALIZE_KILLS to kill it")
    clean = prepared(worker, folders, make_schema_url, run)
    code, statements = worker.run(clean, folders[0], **RUNS[run])
    assert code == 0 and statements, worker.log_tail()
    expected_tables, expected_answers = clean.fingerprints(), answers(clean.url)
    assert any(expected_answers.values())

    # Points over the whole run: the per-document run over every partition, then the graph steps.
    points = [max(1, statements * (i + 1) // (KILLS[run] + 1)) for i in range(KILLS[run])]
    mismatches: dict[int, object] = {}
    for point in points:
        target = prepared(worker, folders, make_schema_url, run)
        killed, _ = worker.run(target, folders[0], kill_at=point, kill="self", **RUNS[run])
        assert killed == -signal.SIGKILL, f"the run meant to die at statement {point} exited {killed}"
        assert worker.run(target, folders[0], **RUNS[run])[0] == 0, worker.log_tail()
        if difference := differing_tables(expected_tables, target.fingerprints()):
            mismatches[point] = difference
        elif (found := answers(target.url)) != expected_answers:
            mismatches[point] = {question for question in QUESTIONS if found[question] != expected_answers[question]}
    print(f"{run} kills: {len(points)} at statements {points} of {statements}, {len(mismatches)} mismatches")
    assert mismatches == {}
