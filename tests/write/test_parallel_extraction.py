"""Extraction parsed by worker processes, the next batch while this one is written, writes exactly
what one process parsing everything in order writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipelines.resources.database import Database, server_on_this_machine
from pipelines.resources.rows import one_row
from pipelines.write.extraction.extraction import extract_documents
from pipelines.write.extraction.extraction_model import ChunkText
from pipelines.write.extraction.spacy_extractor import SpacyExtractor, _tasks_by_page
from tests.write.corpus import seed_documents

DEMO = Path(__file__).resolve().parents[2] / "pipelines" / "demo_corpus" / "documents"
MERGE_SIMILARITY = 0.9
GRAPH_ROWS = {
    "entities": "SELECT id, name, kind, normalized_name, aliases, scopes FROM entity ORDER BY id",
    "facts": """
        SELECT id, subject_id, predicate, object_id, object_value, statement, source_chunk_id, document_id,
               valid_from, valid_to, recorded_to IS NULL, scopes
        FROM fact ORDER BY id
    """,
    "mentions": """
        SELECT entity_id, chunk_id, document_id, name, kind, mentions, scopes
        FROM entity_mention ORDER BY entity_id, chunk_id, name, kind
    """,
}


def graph(database: Database) -> dict[str, list[tuple]]:
    with database.connection() as connection:
        return {name: connection.execute(query).fetchall() for name, query in GRAPH_ROWS.items()}


def test_parallel_extraction_writes_what_serial_extraction_writes(make_database) -> None:
    documents = {path.name: path.read_text() for path in sorted(DEMO.glob("*.md"))}
    serial, parallel = make_database(), make_database()
    for database in (serial, parallel):
        seed_documents(database, documents)

    serial_report = extract_documents(
        serial, SpacyExtractor(workers=1), list(documents), MERGE_SIMILARITY, batch_size=len(documents)
    )
    # Tiny tasks and batches, so every batch is split among both workers and several batches are
    # extracted while earlier ones are written.
    parallel_report = extract_documents(
        parallel, SpacyExtractor(workers=2, chunks_per_task=2), list(documents), MERGE_SIMILARITY, batch_size=3
    )

    expected = graph(serial)
    assert all(expected.values()), "the demo corpus names entities and states facts"
    assert graph(parallel) == expected
    assert parallel_report == serial_report


class WindowsOfOneWorkerFewer(SpacyExtractor):
    """The spaCy extractor, counting the mentions the graph holds when each window of one worker
    fewer opens and closes."""

    def __init__(self, database: Database) -> None:
        super().__init__(workers=2, chunks_per_task=2)
        self.database = database
        self.windows: list[tuple[int, int]] = []

    @contextmanager
    def one_worker_fewer(self) -> Iterator[None]:
        opened = self._mentions()
        with super().one_worker_fewer():
            yield
        self.windows.append((opened, self._mentions()))

    def _mentions(self) -> int:
        with self.database.connection() as connection:
            return one_row(connection.execute("SELECT count(*) FROM entity_mention"), "the mention count")[0]


def test_a_server_on_this_machine_merges_each_batch_while_the_parse_runs_one_worker_fewer(
    database: Database,
) -> None:
    documents = {path.name: path.read_text() for path in sorted(DEMO.glob("*.md"))}
    seed_documents(database, documents)
    extractor = WindowsOfOneWorkerFewer(database)

    extract_documents(database, extractor, list(documents), MERGE_SIMILARITY, batch_size=3)

    assert server_on_this_machine(database.url), "the tests' embedded server runs on this machine"
    assert len(extractor.windows) == len(range(0, len(documents), 3))
    # Every mention was written inside a window: the merges ran while a worker was yielded.
    assert sum(closed - opened for opened, closed in extractor.windows) == extractor._mentions() > 0


def test_no_documents_extract_nothing(database: Database) -> None:
    report = extract_documents(database, SpacyExtractor(), [], MERGE_SIMILARITY)
    assert report.documents == {} and report.missing == []


def test_every_chunk_of_a_page_goes_to_one_task_in_order() -> None:
    titles = ["Hank Snow", "Green", "Hank Snow", "Green", "Tulsa", "Hank Snow", "Tulsa", "Nashville"]
    chunks = [ChunkText(f"c{index}", "text", title, "") for index, title in enumerate(titles)]
    tasks = _tasks_by_page(chunks, 2)
    assert tasks == [[0, 2, 5], [1, 3], [4, 6], [7]]


# A process that starts the extractor's workers, sets one parsing (a long sleep stands in for a
# 2 MB document), prints the workers' pids, and waits to be killed.
BUSY_POOL = """
import os, time
from pipelines.write.extraction.spacy_extractor import SpacyExtractor
extractor = SpacyExtractor(workers=2)
pool = extractor._worker_pool()
pids = {pool.submit(os.getpid).result() for _ in range(8)}
pool.submit(time.sleep, 600)
print(" ".join(map(str, sorted(pids))), flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_workers_end_when_the_process_that_started_them_is_killed() -> None:
    """A SIGKILLed ingest used to leave its workers parsing on, orphaned: 800 MB and a core each for
    as long as the document took, beside the ingest run again."""
    starter = subprocess.Popen([sys.executable, "-c", BUSY_POOL], stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        workers = [int(pid) for pid in starter.stdout.readline().split()]
        assert workers and all(alive(pid) for pid in workers)
    finally:
        starter.kill()
        starter.wait()
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [pid for pid in workers if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []
