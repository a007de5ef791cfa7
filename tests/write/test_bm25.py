"""BM25 from SQL (sql_templates/primitives/bm25.sql over the statistics bm25_index writes) against
an independent implementation, bm25s, on the same corpus and the same tokens."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bm25s
import dagster as dg
import numpy as np
import psycopg
import pytest

from pipelines.shipped import SQL_TEMPLATES
from tests import REPOSITORY
from pipelines.defs.write import document_assets, jobs
from pipelines.read.compiler import compile_template
from pipelines.resources.database import Database, DatabaseResource, connect, prepare_database
from pipelines.resources.migrations import discover_migrations
from pipelines.write.documents.bm25 import statistics_consistent, statistics_health
from pipelines.write.documents.chunking import indexed_text
from pipelines.write.documents.chunks import materialize_chunks
from pipelines.write.documents.documents import materialize_documents
from pipelines.write.documents.registry import register_path
from pipelines.orchestration.runner import ingest

LEXICAL = dg.Definitions(
    assets=[document_assets.documents, document_assets.chunks, document_assets.bm25_index],
    asset_checks=[document_assets.bm25_statistics_match_chunks],
    jobs=[jobs.ingest_documents],
    resources={"database": DatabaseResource()},
)
QUESTIONS = [
    "Who leads Project Heron?",
    "fault code HX-4417 incident",
    "Which supplier makes the VK-22 wrist gimbal?",
    "battery handling and storage rules",
    "cold chain audit of Corvane Pharma Logistics in Porto",
]


# Tenants' records beside the public demo documents, sharing the questions' words so that each
# caller's document frequencies, N and average length differ.
SCOPED_RECORDS = [
    {"id": "heron-a", "title": "Heron staffing", "scopes": ["team-a"],
     "text": "Project Heron is led by a new lead from team A. Heron battery handling rules changed."},
    {"id": "heron-b", "title": "Heron incident", "scopes": ["team-b"],
     "text": "Fault code HX-4417 incident on the Heron rig, logged by team B, with a cold chain audit note."},
    {"id": "heron-legal", "title": "Heron supplier dispute", "scopes": ["legal", "team-b"],
     "text": "The VK-22 wrist gimbal supplier disputes the Corvane Pharma Logistics audit in Porto."},
    {"id": "legal-only", "title": "Retention", "scopes": ["legal"],
     "text": "Storage rules for battery records: keep audit evidence seven years. Storage storage storage."},
]
# Public only, each tenant, a tenant without the label its record also needs, and everyone.
CALLERS = [[], ["team-a"], ["team-b"], ["legal", "team-b"], ["legal", "team-a", "team-b"]]


def lexemes(connection: psycopg.Connection, text: str) -> list[tuple[str, int]]:
    """PostgreSQL's English lexemes of `text` with their number of positions."""
    return connection.execute(
        "SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector('english', %s))", (text,)
    ).fetchall()


@pytest.fixture(scope="module")
def indexed_demo(make_schema_url: Callable[[], str], tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("bm25") / "documents"
    shutil.copytree(REPOSITORY / "pipelines" / "demo_corpus" / "documents", folder)
    (folder / "scoped.jsonl").write_text("".join(json.dumps(record) + "\n" for record in SCOPED_RECORDS))
    url = make_schema_url()
    # Small chunks make many chunks and varied lengths, which is what length normalisation is about.
    run_config = {"ops": {"chunks": {"config": {"max_tokens": 60, "overlap_tokens": 10}}}}
    ingest(folder, definitions=LEXICAL, instance=dg.DagsterInstance.ephemeral(), database_url=url, run_config=run_config)
    return url


def assert_ranks_like_bm25s(
    owner: psycopg.Connection, caller: psycopg.Connection, visible_to: set[str] | None, k1: float, b: float,
    limit: int = 10,
) -> None:
    """bm25.sql run on `caller` scores the top `limit` as bm25s does over the chunks whose scopes are
    all in `visible_to` (every chunk when None), chosen from the owner's view, not by row security."""
    statement = compile_template(SQL_TEMPLATES / "primitives" / "bm25.sql")
    chunks = [
        (chunk_id, title, text)
        for chunk_id, title, text, scopes in owner.execute(
            "SELECT chunk.id, document.title, chunk.text, chunk.scopes"
            " FROM chunk JOIN document ON document.id = chunk.document_id ORDER BY chunk.id"
        )
        if visible_to is None or set(scopes) <= visible_to
    ]
    corpus = [
        [lexeme for lexeme, count in lexemes(owner, indexed_text(title, text)) for _ in range(count)]
        for _, title, text in chunks
    ]
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b, dtype="float64")
    retriever.index(corpus, show_progress=False)
    ids = [chunk_id for chunk_id, _, _ in chunks]
    for question in QUESTIONS:
        with psycopg.RawCursor(caller) as cursor:
            values = {"query_text": question, "bm25_k1": k1, "bm25_b": b, "bm25_limit": limit}
            cursor.execute(statement.sql, statement.parameters(values))
            ranked = cursor.fetchall()
        terms = [lexeme for lexeme, _ in lexemes(owner, question) if lexeme in retriever.vocab_dict]
        # bm25s follows Lucene >= 8, which drops Okapi's constant factor (k1 + 1).
        expected = retriever.get_scores(terms) * (k1 + 1)
        # Chunks holding none of the question's terms are not ranked at all.
        top = [i for i in sorted(range(len(ids)), key=lambda i: (-expected[i], ids[i]))[:limit] if expected[i] > 0]

        assert len(ranked) == len(top), question
        np.testing.assert_allclose([score for _, score in ranked], expected[top], rtol=0, atol=1e-6)
        for chunk_id, score in ranked:
            assert abs(score - expected[ids.index(chunk_id)]) <= 1e-6, (question, chunk_id)


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (0.9, 0.4)])
def test_sql_scores_equal_bm25s_lucene_for_the_top_ten(indexed_demo: str, k1: float, b: float) -> None:
    with connect(indexed_demo) as connection:
        assert_ranks_like_bm25s(connection, connection, None, k1, b)


@pytest.mark.parametrize("limit", [1, 3, 25])
def test_sql_scores_equal_bm25s_lucene_for_other_depths(indexed_demo: str, limit: int) -> None:
    """The ranking skips chunks that provably cannot reach its top `limit` (bm25.sql), and scores
    every posting when that cannot be proved: either way the top `limit` is bm25s's."""
    with connect(indexed_demo) as connection:
        assert_ranks_like_bm25s(connection, connection, None, 1.2, 0.75, limit)


@pytest.mark.parametrize("scopes", CALLERS, ids=lambda scopes: ",".join(scopes) or "public")
def test_a_confined_caller_scores_as_bm25s_over_only_its_visible_chunks(indexed_demo: str, scopes: list[str]) -> None:
    """N, the average length and every document frequency come from the caller's chunks alone, so
    neither its scores nor its ranking reveal anything about chunks it cannot read."""
    with connect(indexed_demo) as owner, Database(indexed_demo, max_size=1) as database:
        with database.connection(scopes) as caller:
            assert_ranks_like_bm25s(owner, caller, set(scopes), 1.2, 0.75)


def test_concurrent_partitions_keep_the_statistics_exact(make_database, tmp_path: Path) -> None:
    """Partitions indexed and retracted at the same time, batch by batch, leave every statistic exact."""
    database = make_database()
    folder = tmp_path / "parallel"
    shutil.copytree(REPOSITORY / "pipelines" / "demo_corpus" / "documents", folder)
    with database.connection() as connection:
        keys = register_path(connection, folder, 10_000_000).keys
    materialize_documents(database, keys, max_bytes=1_000_000, batch_size=100)

    # The chunks step indexes what it writes, under the same statistics lock as bm25_index.
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(
            lambda key: materialize_chunks(database, [key], max_tokens=60, overlap_tokens=10, batch_size=1), keys
        ))
    with database.connection() as connection:
        assert statistics_consistent(statistics_health(connection))

    removed = keys[::2]
    for key in removed:
        (folder / key.split("/", 1)[1]).unlink()
    with database.connection() as connection:
        register_path(connection, folder, 10_000_000)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda key: materialize_documents(database, [key], max_bytes=1_000_000, batch_size=1), removed))
    with database.connection() as connection:
        health = statistics_health(connection)
        assert statistics_consistent(health)
        assert health["chunks"] == connection.execute("SELECT count(*) FROM chunk").fetchone()[0] > 0


def test_postings_stored_before_they_carried_chunk_lengths_get_them_in_place(
    indexed_demo: str, embedding_dimension: int
) -> None:
    """0060 copies each chunk's length into its postings: a database indexed before it ranks exactly
    as before, with no re-indexing."""
    with connect(indexed_demo, autocommit=True) as connection:
        (migration,) = [m for m in discover_migrations() if m.path.name == "0060_bm25_posting_chunk_length.sql"]
        # The postings as they were stored before 0060.
        connection.execute("ALTER TABLE bm25_posting DROP CONSTRAINT bm25_posting_pkey")
        connection.execute("ALTER TABLE bm25_posting DROP COLUMN chunk_length")
        connection.execute("ALTER TABLE bm25_posting ADD PRIMARY KEY (term, chunk_id)")
        connection.execute("DELETE FROM lanegraph_migration WHERE version = %s", (migration.version,))
    assert migration.path.name in prepare_database(indexed_demo, embedding_dimension)
    with connect(indexed_demo) as connection:
        assert statistics_consistent(statistics_health(connection))
        assert connection.execute("SELECT count(*) FROM bm25_posting WHERE chunk_length IS NULL").fetchone()[0] == 0
        assert_ranks_like_bm25s(connection, connection, None, 1.2, 0.75)


def test_term_statistics_stored_before_they_carried_impact_bounds_get_them_in_place(
    indexed_demo: str, embedding_dimension: int
) -> None:
    """0063 gives each (term, scope set) the bounds of its postings: a database indexed before it
    ranks exactly as before, with no re-indexing."""
    with connect(indexed_demo, autocommit=True) as connection:
        (migration,) = [m for m in discover_migrations() if m.path.name == "0063_bm25_term_impact_bounds.sql"]
        connection.execute("ALTER TABLE bm25_term DROP COLUMN max_term_frequency, DROP COLUMN min_chunk_length")
        connection.execute("DELETE FROM lanegraph_migration WHERE version = %s", (migration.version,))
    assert migration.path.name in prepare_database(indexed_demo, embedding_dimension)
    with connect(indexed_demo) as connection:
        assert statistics_consistent(statistics_health(connection))
        loose = connection.execute(
            "SELECT count(*) FROM bm25_term t WHERE (t.max_term_frequency, t.min_chunk_length) <> ("
            " SELECT max(p.term_frequency), min(p.chunk_length) FROM bm25_posting p"
            " WHERE p.term = t.term AND p.scopes = t.scopes)"
        ).fetchone()[0]
        assert loose == 0
        assert_ranks_like_bm25s(connection, connection, None, 1.2, 0.75, limit=3)


def test_a_posting_beyond_its_terms_impact_bounds_is_reported(indexed_demo: str) -> None:
    with connect(indexed_demo) as connection:
        connection.execute(
            "UPDATE bm25_term SET max_term_frequency = 1"
            " WHERE (term, scopes) = (SELECT term, scopes FROM bm25_posting WHERE term_frequency > 1 LIMIT 1)"
        )
        health = statistics_health(connection)
        connection.rollback()
    assert health["broken_impact_bounds"] == 1
    assert not statistics_consistent(health)


def test_a_posting_with_another_length_than_its_chunk_is_reported(indexed_demo: str) -> None:
    with connect(indexed_demo) as connection:
        connection.execute(
            "UPDATE bm25_posting SET chunk_length = chunk_length + 1"
            " WHERE (term, chunk_id) = (SELECT term, chunk_id FROM bm25_posting ORDER BY term, chunk_id LIMIT 1)"
        )
        health = statistics_health(connection)
        connection.rollback()
    assert health["wrong_lengths"] == 1
    assert not statistics_consistent(health)
