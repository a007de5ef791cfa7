"""An incremental ingest killed anywhere, then run again, leaves exactly what an uninterrupted
incremental ingest leaves: the graph refresh records what it consumed, so a re-run redoes what is
missing instead of saying "nothing new to materialize".

Folder A is ingested, then folder B; the run of B is cut short (right after its per-document run, or
SIGKILLed before its N-th statement, spread over the graph refresh) and run again. Tables (per-table
fingerprints, timestamps excluded) must equal those of a clean A-then-B build. LANEGRAPH_INCREMENTAL_KILLS
sets how many kill points (default 2); docs/reliability.md gives a longer run's figures.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pipelines.write.graph.refresh_state import steps_out_of_step
from tests.reliability.writes import Target, WriteWorker, differing_tables, fresh_home, make_corpus, second_folder

pytestmark = pytest.mark.slow

KILLS = int(os.environ.get("LANEGRAPH_INCREMENTAL_KILLS", "2"))
GRAPH_STEPS = ["entity_graph", "title_links", "communities", "entity_profiles", "raptor_levels"]


@pytest.fixture(scope="module")
def folders(write_scratch: Path) -> tuple[Path, Path]:
    return make_corpus(write_scratch / "folder-a"), second_folder(write_scratch / "folder-b")


@pytest.fixture(scope="module")
def clean_build(worker: WriteWorker, folders: tuple[Path, Path], make_schema_url: Callable[[], str]) -> tuple[dict, int]:
    """A then B, uninterrupted: the tables every interrupted build must end up equal to, and how many
    statements B's ingest sent."""
    first, second = folders
    target = Target(make_schema_url(), fresh_home())
    assert worker.run(target, first)[0] == 0, worker.log_tail()
    code, statements = worker.run(target, second)
    assert code == 0 and statements, worker.log_tail()
    return target.fingerprints(), statements


def interrupted(worker: WriteWorker, folders: tuple[Path, Path], make_schema_url: Callable[[], str]) -> Target:
    target = Target(make_schema_url(), fresh_home())
    assert worker.run(target, folders[0])[0] == 0, worker.log_tail()
    return target


def test_a_rerun_after_the_per_document_run_alone_refreshes_the_graph(
    worker: WriteWorker, folders: tuple[Path, Path], clean_build: tuple[dict, int], make_schema_url: Callable[[], str]
) -> None:
    expected, _ = clean_build
    target = interrupted(worker, folders, make_schema_url)
    assert worker.run(target, folders[1], graph=False)[0] == 0, worker.log_tail()
    with psycopg.connect(target.url) as connection:
        assert steps_out_of_step(connection, GRAPH_STEPS) == GRAPH_STEPS
    assert worker.run(target, folders[1])[0] == 0, worker.log_tail()
    with psycopg.connect(target.url) as connection:
        assert steps_out_of_step(connection, GRAPH_STEPS) == []
    assert differing_tables(expected, target.fingerprints()) == {}


def test_incremental_ingests_killed_in_the_graph_refresh_then_rerun_equal_a_clean_build(
    worker: WriteWorker, folders: tuple[Path, Path], clean_build: tuple[dict, int], make_schema_url: Callable[[], str]
) -> None:
    expected, statements = clean_build
    # The graph refresh is the run's last part: points over its second half.
    points = [statements // 2 + statements * (i + 1) // (2 * (KILLS + 1)) for i in range(KILLS)]
    mismatches = {}
    for point in points:
        target = interrupted(worker, folders, make_schema_url)
        killed, _ = worker.run(target, folders[1], kill_at=point, kill="self")
        assert killed == -signal.SIGKILL, f"the run meant to die at statement {point} exited {killed}"
        assert worker.run(target, folders[1])[0] == 0, worker.log_tail()
        if difference := differing_tables(expected, target.fingerprints()):
            mismatches[point] = difference
    print(f"incremental kills: {len(points)} at statements {points} of {statements}, {len(mismatches)} mismatches")
    assert mismatches == {}
