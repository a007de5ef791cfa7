"""Driving the write side from tests: a small corpus, the fork-server worker, fresh targets to write to."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests import REPOSITORY
from tests.reliability.fingerprints import table_fingerprints

DEMO = REPOSITORY / "pipelines" / "demo_corpus" / "documents"
NOTES = [
    {"id": "note-1", "title": "Dock scheduling", "scopes": ["team-a"],
     "text": "Mara Okafor leads the Rotterdam yard lab. The lab schedules dock slots weekly."},
    {"id": "note-2", "title": "Battery recall", "scopes": ["team-b", "legal"],
     "text": "Batteries from lot 7 were recalled in March 2025 by Corvane Logistics."},
]
RUN_TIMEOUT_SECONDS = 300


def make_corpus(folder: Path) -> Path:
    """Three demo documents and a JSONL file with scoped records."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("project-heron.md", "people-and-teams.md", "supplier-register.md"):
        shutil.copy(DEMO / name, folder / name)
    (folder / "notes.jsonl").write_text("".join(json.dumps(record) + "\n" for record in NOTES))
    return folder


def second_folder(folder: Path) -> Path:
    """Two demo documents that make_corpus's folder lacks: what an incremental run adds."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(path.name for path in DEMO.glob("*.md"))[-2:]:
        shutil.copy(DEMO / name, folder / name)
    return folder


@dataclass
class Target:
    """Where one scenario writes: a database URL and its own Dagster instance directory."""

    url: str
    home: Path

    def fingerprints(self) -> dict[str, tuple[int, str]]:
        with psycopg.connect(self.url) as connection:
            return table_fingerprints(connection)


@dataclass(frozen=True)
class Baseline:
    """An uninterrupted run of the corpus: how many statements it sent, the tables it left, where."""

    statements: int
    fingerprints: dict[str, tuple[int, str]]
    url: str


class WriteWorker:
    """The test's end of tests/reliability/write_worker.py."""

    def __init__(self, scratch: Path, hash_seed: int = 0) -> None:
        self.scratch = scratch
        # One hash seed for every run of a worker, so a crash test compares crash recovery alone;
        # test_the_tables_do_not_depend_on_the_hash_seed checks the seed separately.
        environment = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.write_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment, cwd=REPOSITORY,
        )

    def _ask(self, request: dict) -> dict:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], RUN_TIMEOUT_SECONDS)
        if not ready:
            if request["op"] == "wait":
                os.kill(request["pid"], signal.SIGKILL)
            raise AssertionError(f"no answer to {request['op']} in {RUN_TIMEOUT_SECONDS} s:\n{self.log_tail(60)}")
        line = self.process.stdout.readline()
        assert line, f"the write worker died (exit {self.process.poll()})"
        return json.loads(line)

    def start(self, target: Target, corpus: Path, **fault: object) -> tuple[int, Path]:
        """Start one ingest of `corpus` into `target`; returns the child's pid and its result file."""
        name = uuid.uuid4().hex[:8]
        result = self.scratch / f"{name}.json"
        job = {
            "url": target.url, "corpus": str(corpus), "home": str(target.home),
            "log": str(self.scratch / f"{name}.log"), "result": str(result), **fault,
        }
        return self._ask({"op": "start", "job": job})["pid"], result

    def wait(self, pid: int) -> int:
        return self._ask({"op": "wait", "pid": pid})["exit"]

    def run(self, target: Target, corpus: Path, **fault: object) -> tuple[int, int | None]:
        """One ingest (or, with command="materialize", materialization) to the end or to its fault:
        exit code and, if it finished, its statement count."""
        pid, result = self.start(target, corpus, **fault)
        code = self.wait(pid)
        statements = json.loads(result.read_text())["statements"] if result.exists() else None
        return code, statements

    def log_tail(self, lines: int = 15) -> str:
        logs = sorted(self.scratch.glob("*.log"), key=lambda p: p.stat().st_mtime)
        return "\n".join(logs[-1].read_text().splitlines()[-lines:]) if logs else ""

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=RUN_TIMEOUT_SECONDS)


def fresh_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="lanegraph-dagster-"))


def differing_tables(expected: dict[str, tuple[int, str]], found: dict[str, tuple[int, str]]) -> dict[str, str]:
    """table -> "expected rows vs found rows" for every table whose fingerprint differs."""
    return {
        table: f"{expected.get(table, (0, ''))[0]} rows vs {found.get(table, (0, ''))[0]}"
        for table in sorted(set(expected) | set(found))
        if expected.get(table) != found.get(table)
    }
