"""Shared by the crash and concurrency tests: one warm write worker, one corpus, one clean run of it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reliability.writes import Baseline, Target, WriteWorker, fresh_home, make_corpus


@pytest.fixture(scope="session")
def write_scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lanegraph-writes-") as folder:
        yield Path(folder)


@pytest.fixture(scope="session")
def worker(write_scratch: Path) -> Iterator[WriteWorker]:
    worker = WriteWorker(write_scratch)
    yield worker
    worker.close()


@pytest.fixture(scope="session")
def corpus(write_scratch: Path) -> Path:
    return make_corpus(write_scratch / "corpus")


@pytest.fixture(scope="session")
def baseline(worker: WriteWorker, corpus: Path, make_schema_url: Callable[[], str]) -> Baseline:
    """An uninterrupted run of the corpus, which every faulty or concurrent run must end up equal to."""
    target = Target(make_schema_url(), fresh_home())
    code, statements = worker.run(target, corpus)
    assert code == 0 and statements, worker.log_tail()
    return Baseline(statements, target.fingerprints(), target.url)
