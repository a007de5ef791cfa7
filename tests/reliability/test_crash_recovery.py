"""Crash recovery: a write run killed at several points, then run again, leaves exactly the tables an
uninterrupted run leaves (per-table fingerprints: row count and md5 of the ordered rows, timestamps
excluded).

Faults are placed by statement count rather than by time: an uninterrupted run reports how many SQL
statements and commits it sends, and each faulty run dies just before its N-th, for N spread over
the whole run (documents, chunks, embeddings, BM25, extraction, graph, communities, profiles,
RAPTOR). LANEGRAPH_FAULT_POINTS sets how many points (default 3).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pipelines.cli import main
from pipelines.resources.database import prepare_database
from pipelines.resources.embedded_postgres import EmbeddedPostgres
from tests.reliability.write_worker import server_processes
from tests.reliability.writes import Baseline, Target, WriteWorker, differing_tables, fresh_home

pytestmark = pytest.mark.slow

FAULT_POINTS = int(os.environ.get("LANEGRAPH_FAULT_POINTS", "3"))


def spread(total: int, count: int) -> list[int]:
    return [max(1, total * (i + 1) // (count + 1)) for i in range(count)]


def test_runs_killed_at_several_points_then_rerun_converge(
    worker: WriteWorker, corpus: Path, baseline: Baseline, make_schema_url: Callable[[], str]
) -> None:
    statements, expected = baseline.statements, baseline.fingerprints
    mismatches: dict[int, dict[str, str]] = {}
    points = spread(statements, FAULT_POINTS)
    for point in points:
        target = Target(make_schema_url(), fresh_home())
        killed, _ = worker.run(target, corpus, kill_at=point, kill="self")
        assert killed == -signal.SIGKILL, f"the run meant to die at statement {point} exited {killed}"
        rerun, _ = worker.run(target, corpus)
        assert rerun == 0, worker.log_tail()
        if difference := differing_tables(expected, target.fingerprints()):
            mismatches[point] = difference
    print(
        f"process kills: {len(points)} faults injected at statements {points} of {statements}, "
        f"{len(expected)} tables compared after each re-run, {len(mismatches)} mismatches"
    )
    assert mismatches == {}


def test_a_run_killed_twice_then_rerun_converges(
    worker: WriteWorker, corpus: Path, baseline: Baseline, make_schema_url: Callable[[], str]
) -> None:
    statements, expected = baseline.statements, baseline.fingerprints
    target = Target(make_schema_url(), fresh_home())
    first, second = spread(statements, 2)
    assert worker.run(target, corpus, kill_at=first, kill="self")[0] == -signal.SIGKILL
    # The recovery run is killed too, a little later in its own sequence (if it gets that far).
    assert worker.run(target, corpus, kill_at=second, kill="self")[0] in (0, -signal.SIGKILL)
    assert worker.run(target, corpus)[0] == 0, worker.log_tail()
    assert differing_tables(expected, target.fingerprints()) == {}


def test_killing_the_database_server_mid_run_then_rerun_converges(
    worker: WriteWorker, corpus: Path, baseline: Baseline, own_server: EmbeddedPostgres,
    embedding_dimension: int,
) -> None:
    statements, expected = baseline.statements, baseline.fingerprints
    url = own_server.database_url("lanegraph")
    prepare_database(url, embedding_dimension)
    target = Target(url, fresh_home())
    point = statements // 2
    crashed, _ = worker.run(target, corpus, kill_at=point, kill="server", postmaster_pid=own_server.status().pid)
    assert crashed == -signal.SIGKILL and not own_server.status().running
    # As a user would, from a new process (the wheel caches a server handle per process); the
    # server's crash recovery replays the write-ahead log.
    restarted = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "db", "start"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "LANEGRAPH_DATA_DIR": str(own_server.data_dir)},
    )
    assert restarted.returncode == 0, restarted.stderr
    assert worker.run(target, corpus)[0] == 0, worker.log_tail()
    difference = differing_tables(expected, target.fingerprints())
    print(f"server kill: 1 fault injected at statement {point} of {statements}, {len(difference)} mismatching tables")
    assert difference == {}


def test_the_tables_do_not_depend_on_the_hash_seed(
    tmp_path: Path, corpus: Path, baseline: Baseline, make_schema_url: Callable[[], str]
) -> None:
    other = WriteWorker(tmp_path, hash_seed=1)
    try:
        target = Target(make_schema_url(), fresh_home())
        assert other.run(target, corpus)[0] == 0, other.log_tail()
    finally:
        other.close()
    # Set iteration order follows the hash seed; output that depends on it differs here (an earlier
    # extraction did: 59 vs 56 entities, 72 vs 78 facts for two clean runs of this corpus).
    difference = differing_tables(baseline.fingerprints, target.fingerprints())
    print(f"hash seed 0 vs 1: {len(difference)} differing tables {difference}")
    assert difference == {}


@pytest.mark.parametrize("statement", ["INSERT INTO document_source", "INSERT INTO document ("])
def test_a_server_killed_under_ingest_ends_in_one_line_that_says_so(
    statement: str, corpus: Path, own_server: EmbeddedPostgres, embedding_dimension: int,
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
) -> None:
    """The postmaster dies while sources are registered (outside Dagster) or while the documents
    step writes (inside it): stderr holds the progress lines and one error line, with no stack
    trace and no stream of refused reconnects."""
    url = own_server.database_url("lanegraph")
    prepare_database(url, embedding_dimension)
    postmaster = own_server.status().pid
    monkeypatch.setenv("DATABASE_URL", url)
    for name in ("execute", "executemany"):
        original = getattr(psycopg.Cursor, name)

        def killing(self, query, *args, __original=original, **kwargs):  # type: ignore[no-untyped-def]
            if statement in str(query):
                for pid in server_processes(postmaster):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            return __original(self, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.Cursor, name, killing)
    status = main(["ingest", str(corpus)])
    stderr = capfd.readouterr().err
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("lanegraph: error:")]
    print(f"server kill at {statement!r}: exit {status}, {len(lines)} stderr lines, last: {lines[-1][:160]}")
    assert status == 2 and len(errors) == 1, stderr
    assert "lost the" in errors[0] and "run the same command again" in errors[0], errors[0]
    others = [line for line in lines if line not in errors]
    # Progress lines: "documents: 4/4 sources in 0.0 s (85/s)".
    assert all(re.fullmatch(r"[a-z_0-9 ]+: [\d,]+/[\d,]+ [\w ]+( in [\d.]+ s)?( \(.+\))?", line) for line in others), others
