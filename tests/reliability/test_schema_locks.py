"""Writers of different schemas of one database never wait for each other's locks.

PostgreSQL keys advisory locks by database, and the graph write lock and the BM25 statistics lock
had constant keys: builds in two schemas of one server's database (evaluation builds on a
DATABASE_URL server, one schema per project) merged one at a time. Each test holds a lock in one
schema and writes in another; a writer that waited would time out.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pipelines.resources.database import Database, connect
from pipelines.write.documents.bm25 import apply_statistics, index_chunks
from pipelines.write.documents.bm25_sql import LOCK_STATISTICS
from pipelines.write.extraction.extraction import extract_documents
from pipelines.write.extraction.extraction_sql import GRAPH_WRITE_LOCK
from pipelines.write.extraction.spacy_extractor import SpacyExtractor
from tests.write.corpus import seed_documents

DEMO = Path(__file__).resolve().parents[2] / "pipelines" / "demo_corpus" / "documents"
WAIT_SECONDS = 120


def finishes_while_held(lock: str, busy: Database, write: Callable[[], object]) -> object:
    """`write()`'s result, run while another connection holds `lock` in `busy`'s schema."""
    blocker = connect(busy.url)
    blocker.execute(lock)
    with ThreadPoolExecutor(1) as run:
        written = run.submit(write)
        try:
            return written.result(timeout=WAIT_SECONDS)
        finally:
            blocker.rollback()
            blocker.close()


def demo_documents(count: int) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(DEMO.glob("*.md"))[:count]}


def test_a_schema_merges_its_graph_while_another_schema_holds_its_graph_lock(make_database) -> None:
    busy, free = make_database(), make_database()
    documents = demo_documents(2)
    seed_documents(free, documents)
    report = finishes_while_held(
        GRAPH_WRITE_LOCK, busy, lambda: extract_documents(free, SpacyExtractor(workers=1), list(documents), 0.9)
    )
    assert set(report.documents) == set(documents)


def test_a_schema_updates_bm25_statistics_while_another_schema_holds_its_lock(make_database) -> None:
    busy, free = make_database(), make_database()
    seed_documents(free, demo_documents(2))

    def index() -> int:
        with free.connection() as connection:
            chunks = connection.execute("SELECT id, text FROM chunk ORDER BY id").fetchall()
            apply_statistics(connection, index_chunks(connection, chunks))
            return connection.execute("SELECT count(*) FROM bm25_term").fetchone()[0]

    assert finishes_while_held(LOCK_STATISTICS, busy, index) > 0
