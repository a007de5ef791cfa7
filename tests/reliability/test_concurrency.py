"""Concurrency: two materializations of the same partitions at once, find during a materialization,
and a find that cannot finish in time.

- Two runs of the same corpus into one database at the same moment both finish (no deadlock, no
  unique violation) and leave exactly the tables one run leaves (no duplicate rows).
- While a run replaces a document, every snapshot a reader takes (a find, or one SELECT over the
  chunks) holds each document wholly in its old or wholly in its new version, never a mix.
- A find blocked past its statement timeout comes back as a degraded fusion result naming the
  timeout, with the other sub-queries' evidence intact, instead of hanging.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pipelines.config import load_config
from pipelines.fusion import BM25Args, FindArgs, FuseOptions, SubQuery, fuse
from pipelines.fusion.postgres_client import PostgresQueryClient
from pipelines.read.find import find
from pipelines.resources.database import Database
from tests.reliability.tenancy import HashedEmbedder, hashed_embedding, plant_world
from tests.reliability.writes import Baseline, Target, WriteWorker, differing_tables, fresh_home, make_corpus

REVISION = "zzrevised"
WAITERS_ON_FACT = "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'fact'::regclass"


@pytest.mark.slow
def test_two_runs_of_the_same_partitions_at_once(
    worker: WriteWorker, corpus: Path, baseline: Baseline, make_schema_url: Callable[[], str]
) -> None:
    expected = baseline.fingerprints
    url = make_schema_url()
    # Separate Dagster instances: each run believes every partition is its own to process.
    runs = [worker.start(Target(url, fresh_home()), corpus) for _ in range(2)]
    codes = [worker.wait(pid) for pid, _ in runs]
    assert codes == [0, 0], worker.log_tail(40)
    difference = differing_tables(expected, Target(url, fresh_home()).fingerprints())
    print(f"concurrent runs: 2 runs of the same partitions, exits {codes}, {len(difference)} mismatching tables")
    assert difference == {}


def revise(document: Path) -> None:
    """Every sentence of the new version carries a marker, so any chunk tells its version."""
    text = document.read_text()
    document.write_text(text.replace(". ", f" {REVISION}. ").replace(".\n", f" {REVISION}.\n"))


def versions_in(texts: list[str]) -> set[bool]:
    return {REVISION in text for text in texts}


@pytest.mark.slow
def test_readers_during_a_materialization_see_each_document_whole(
    worker: WriteWorker, tmp_path: Path, make_schema_url: Callable[[], str], embedding_dimension: int
) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    target = Target(make_schema_url(), fresh_home())
    assert worker.run(target, corpus)[0] == 0, worker.log_tail()
    revised = sorted(corpus.glob("*.md"))
    for document in revised:
        revise(document)
    keys = [f"corpus/{document.name}" for document in revised]

    tally: Counter[str] = Counter()
    config = load_config()
    embedder = HashedEmbedder(embedding_dimension)
    with Database(target.url) as database:
        pid, _ = worker.start(target, corpus)
        finished = threading.Event()
        waiter = threading.Thread(target=lambda: (tally.update(exit=worker.wait(pid)), finished.set()))
        waiter.start()
        while not finished.is_set():
            with database.connection() as connection:
                snapshot = connection.execute(
                    "SELECT c.document_id, array_agg(c.text) FROM chunk c JOIN document d ON d.id = c.document_id "
                    "WHERE d.source_key = ANY(%s) GROUP BY c.document_id",
                    (keys,),
                ).fetchall()
            tally["snapshots"] += 1
            for _, texts in snapshot:
                tally["documents seen"] += 1
                tally["mixed"] += len(versions_in(texts)) > 1
                tally["revised" if versions_in(texts) == {True} else "original"] += 1
            result = find(database, "Heron supplier people teams", config=config, embedder=embedder)
            tally["finds"] += 1
            by_document: dict[str, list[str]] = {}
            for candidate in result.candidates:
                if candidate.kind == "sources" and candidate.document_id:
                    by_document.setdefault(candidate.document_id, []).append(candidate.line)
            tally["mixed"] += sum(len(versions_in(lines)) > 1 for lines in by_document.values())
        waiter.join()
    print(
        f"readers during a run: {tally['snapshots']} snapshots and {tally['finds']} finds, "
        f"{tally['documents seen']} documents seen ({tally['original']} original, {tally['revised']} revised), "
        f"{tally['mixed']} mixed"
    )
    assert tally["exit"] == 0, worker.log_tail()
    assert tally["mixed"] == 0


@pytest.fixture()
def planted_database(database: Database, embedding_dimension: int) -> Database:
    with database.connection() as connection:
        plant_world(connection, np.random.default_rng(5), lambda t: hashed_embedding(t, embedding_dimension),
                    documents=8, entities=12, facts=20)
    return database


@pytest.mark.parametrize("deadline", ["statement_timeout", "fusion_deadline"])
def test_a_find_that_cannot_finish_degrades_instead_of_hanging(
    planted_database: Database, embedding_dimension: int, deadline: str
) -> None:
    """An exclusive lock on `fact` (a long migration, say) holds the find statement back."""
    client = PostgresQueryClient(
        planted_database, config=load_config(), embedder=HashedEmbedder(embedding_dimension),
        statement_timeout_seconds=1.0 if deadline == "statement_timeout" else 30.0,
    )
    queries = [
        SubQuery("find", "2", "find", find=FindArgs("battery audit supplier drone")),
        SubQuery("bm25", "1", "lexical", bm25=BM25Args("battery audit supplier drone")),
    ]
    with Database(planted_database.url) as blocker, blocker.connection() as locked:
        locked.execute("LOCK TABLE fact IN ACCESS EXCLUSIVE MODE")
        timeout = None if deadline == "statement_timeout" else 3.0
        result = asyncio.run(fuse(client, queries, FuseOptions(budget_tokens=100_000), timeout=timeout))
        # The timed-out statement must be cancelled on the server, not left queued behind the lock.
        waiters = WAITERS_ON_FACT
        for _ in range(50):
            if not locked.execute(waiters).fetchone()[0]:
                break
            time.sleep(0.1)
        still_waiting = locked.execute(waiters).fetchone()[0]
    assert result.degraded
    assert result.degraded_reason.startswith("find:find failed:") and ";" not in result.degraded_reason
    assert ("statement timeout" if deadline == "statement_timeout" else "timed out") in result.degraded_reason
    assert any(item.source == "lexical" for item in result.evidence)
    assert still_waiting == 0
