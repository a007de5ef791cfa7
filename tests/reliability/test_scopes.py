"""The leak test: random tenants, random scope sets, many questions; zero rows outside the caller's scopes.

A world of documents, chunks, BM25 statistics, entities, mentions, facts, session items,
communities, profiles and RAPTOR nodes is planted with random scopes (tests/reliability/tenancy.py).
Random callers then read it every way a caller can: plain SELECTs over every table and view, dense
nearest-neighbour queries on every embedded table, the fusion primitives and the find statement.
Every output value is scanned for planted tokens; each must belong to a row the caller may read.
LANEGRAPH_LEAK_SEED picks another world; the summary lines report what was checked.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import psycopg
import pytest
from psycopg import sql

from pipelines.config import load_config
from pipelines.fusion import (
    BM25Args,
    EntityStateArgs,
    Evidence,
    FindArgs,
    FuseOptions,
    PredicateWalkArgs,
    SubQuery,
    TemporalRangeArgs,
    fuse,
)
from pipelines.fusion.postgres_client import PostgresQueryClient
from pipelines.read.cacheability import generic_plan, plan_nodes
from pipelines.read.compiler import compile_find
from pipelines.read.find import find
from pipelines.resources.database import Database
from tests.plans import every_lane_on
from tests.reliability.tenancy import (
    ESCAPES,
    PREDICATES,
    WORDS,
    HashedEmbedder,
    LeakCount,
    World,
    plant_world,
    random_caller,
    random_question,
)
from tests.reliability.writes import Baseline

SEED = int(os.environ.get("LANEGRAPH_LEAK_SEED", "20260829"))
CALLERS = 40
QUESTIONS_PER_CALLER = 6
NEAREST = 10


@dataclass
class PlantedDatabase:
    database: Database
    world: World
    embedder: HashedEmbedder
    rng: np.random.Generator


@pytest.fixture(scope="module")
def planted(make_database: Callable[[], Database], embedding_dimension: int) -> Iterator[PlantedDatabase]:
    database = make_database()
    embedder = HashedEmbedder(embedding_dimension)
    with database.connection() as connection:
        world = plant_world(connection, np.random.default_rng(SEED), embedder.embed)
    yield PlantedDatabase(database, world, embedder, np.random.default_rng(SEED + 1))


def report(count: LeakCount, label: str) -> None:
    print(count.summary(label))
    assert count.leaked_rows == 0 and count.leaked_tokens == 0, count.examples


def scoped_relations(database: Database) -> list[tuple[str, str]]:
    """(name, kind) of every table and view in the schema that has a `scopes` column."""
    with database.connection() as connection:
        return connection.execute(
            """
            SELECT c.relname, c.relkind FROM pg_class c
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'scopes' AND NOT a.attisdropped
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v')
            ORDER BY c.relname
            """
        ).fetchall()


def embedded_tables(database: Database) -> list[str]:
    with database.connection() as connection:
        return [
            table
            for (table,) in connection.execute(
                """
                SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
                WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
                  AND a.attname = 'embedding' AND NOT a.attisdropped ORDER BY 1
                """
            )
        ]


def read_every_relation(
    connection: psycopg.Connection, planted: PlantedDatabase, relations: list[tuple[str, str]],
    caller: frozenset[str], count: LeakCount,
) -> None:
    """Every scoped table and view as the caller reads it: nothing foreign, and from each table
    everything the caller may read, or the policy is too tight."""
    expected = planted.world.expected_counts(caller)
    for name, kind in relations:
        rows = connection.execute(
            sql.SQL("SELECT to_jsonb(t)::text, t.scopes FROM {} AS t").format(sql.Identifier(name))
        ).fetchall()
        count.queries += 1
        for text, scopes in rows:
            count.check_scopes(caller, scopes, name)
            count.check_row(planted.world, caller, [text], name)
        if kind != "v":
            assert len(rows) == expected[name], (name, sorted(caller))


def test_every_table_and_view_read_directly(planted: PlantedDatabase) -> None:
    count = LeakCount()
    relations = scoped_relations(planted.database)
    planted_tables = {table for table, _ in planted.world.rows}
    assert planted_tables <= {name for name, kind in relations if kind != "v"}, "a table was not planted"
    for _ in range(CALLERS):
        caller = random_caller(planted.rng, planted.world)
        with planted.database.connection(sorted(caller)) as connection:
            read_every_relation(connection, planted, relations, caller, count)
    report(count, "direct reads")


def test_every_table_and_view_read_after_caller_written_escapes(planted: PlantedDatabase) -> None:
    """The reads above, each after a statement a caller might write to leave its confinement: the
    statement fails or leaves the session confined (or with no rights at all), never wider."""
    count = LeakCount()
    relations = scoped_relations(planted.database)
    with planted.database.connection() as connection:
        owner = connection.execute("SELECT current_user").fetchone()[0]
    outcomes: Counter[str] = Counter()
    for escape in ESCAPES * 3:
        caller = random_caller(planted.rng, planted.world)
        with planted.database.connection(sorted(caller)) as connection:
            try:
                with connection.transaction():
                    connection.execute(escape.format(owner=owner))
                outcomes["ran"] += 1
            except psycopg.Error:
                outcomes["refused"] += 1
            for name, _ in relations:
                try:
                    with connection.transaction():
                        rows = connection.execute(
                            sql.SQL("SELECT to_jsonb(t)::text, t.scopes FROM {} AS t").format(sql.Identifier(name))
                        ).fetchall()
                except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedTable):
                    outcomes["reads without rights"] += 1
                    continue
                count.queries += 1
                for text, scopes in rows:
                    count.check_scopes(caller, scopes, name)
                    count.check_row(planted.world, caller, [text], name)
    print(f"escapes: {dict(outcomes)}")
    report(count, "direct reads after escapes")


# Session state a block may leave behind, beside the escapes: none may reach the next block. (A
# block that prepares statements ends its connection: tests/resources/test_row_security.py.)
LEFT_BEHIND = [
    "CREATE TEMP TABLE document AS SELECT * FROM document",
    "SELECT set_config('lanegraph.scopes_signature', current_setting('lanegraph.scopes_signature'), false)",
    "SET search_path = pg_temp, public",
]


def test_kept_confined_connections_pass_nothing_from_block_to_block(planted: PlantedDatabase) -> None:
    """Confined connections are kept between blocks (`ConfinedConnections`). Each block here reads
    every table and view, then runs a caller-written escape and leaves what session state it can;
    the next block on that connection must read exactly what a fresh one would, and no backend
    serves a second scope set."""
    count = LeakCount()
    relations = scoped_relations(planted.database)
    with planted.database.connection() as connection:
        owner = connection.execute("SELECT current_user").fetchone()[0]
    # Few callers, so connections are reused, and more than the pool holds, so some are replaced.
    callers = [random_caller(planted.rng, planted.world) for _ in range(4)]
    served: defaultdict[int, set[frozenset[str]]] = defaultdict(set)
    blocks: Counter[int] = Counter()
    with Database(planted.database.url, max_size=3) as database:
        for step in range(CALLERS):
            caller = callers[int(planted.rng.integers(len(callers)))]
            with database.connection(sorted(caller)) as connection:
                served[connection.info.backend_pid].add(caller)
                blocks[connection.info.backend_pid] += 1
                read_every_relation(connection, planted, relations, caller, count)
                for statement in [*LEFT_BEHIND, ESCAPES[step % len(ESCAPES)].format(owner=owner)]:
                    try:
                        with connection.transaction():
                            connection.execute(statement)
                    except psycopg.Error:
                        pass
    assert all(len(callers) == 1 for callers in served.values()), served
    assert max(blocks.values()) > 1, "no connection was kept"
    print(f"kept confined connections: {CALLERS} blocks on {len(blocks)} backends")
    report(count, "reads on kept connections")


def test_nearest_neighbour_queries_on_every_embedded_table(planted: PlantedDatabase) -> None:
    count = LeakCount()
    tables = embedded_tables(planted.database)
    for _ in range(CALLERS):
        caller = random_caller(planted.rng, planted.world)
        questions = [random_question(planted.rng, planted.world) for _ in range(QUESTIONS_PER_CALLER)]
        vectors = planted.embedder.embed(questions)
        with planted.database.connection(sorted(caller)) as connection:
            for vector in vectors:
                for table in tables:
                    rows = connection.execute(
                        sql.SQL(
                            "SELECT to_jsonb(t)::text, t.scopes FROM {} AS t ORDER BY t.embedding <=> %s LIMIT %s"
                        ).format(sql.Identifier(table)),
                        (vector, NEAREST),
                    ).fetchall()
                    count.queries += 1
                    for text, scopes in rows:
                        count.check_scopes(caller, scopes, table)
                        count.check_row(planted.world, caller, [text], table)
    report(count, "nearest neighbours")


def test_the_detector_catches_what_the_owner_would_leak(planted: PlantedDatabase) -> None:
    """Read as the owner on behalf of a one-tenant caller: the same checks must then find leaks."""
    count = LeakCount()
    caller = frozenset({"acme"})
    with planted.database.connection() as connection:
        for text, scopes in connection.execute("SELECT to_jsonb(t)::text, t.scopes FROM fact AS t"):
            count.check_scopes(caller, scopes, "fact")
            count.check_row(planted.world, caller, [text], "fact")
    assert count.leaked_rows > 0 and count.leaked_tokens > 0


def test_find_returns_nothing_outside_the_callers_scopes(planted: PlantedDatabase) -> None:
    count = LeakCount()
    config = every_lane_on(load_config())
    lanes_with_rows: set[str] = set()
    for _ in range(CALLERS):
        caller = random_caller(planted.rng, planted.world)
        for _ in range(QUESTIONS_PER_CALLER):
            question = random_question(planted.rng, planted.world)
            result = find(
                planted.database, question, config=config, embedder=planted.embedder, scopes=sorted(caller)
            )
            count.queries += 1
            # Every candidate the statement produced, not only those that fit the budget.
            for candidate in result.candidates:
                lanes_with_rows.add(candidate.lane)
                count.check_scopes(caller, candidate.scopes, candidate.lane)
                count.check_row(planted.world, caller, candidate.__dict__.values(), candidate.lane)
    print(f"find lanes that returned rows: {', '.join(sorted(lanes_with_rows))}")
    report(count, "find")


def random_subqueries(rng: np.random.Generator, world: World, question: str) -> list[SubQuery]:
    """One sub-query of every primitive, its arguments naming entities of any tenant."""
    entities = tuple(str(e) for e in rng.choice(world.entity_ids, 8, replace=False))
    start_year = int(rng.integers(2018, 2022))
    return [
        SubQuery("entity_state", "0", "state", entity_state=EntityStateArgs(entities)),
        SubQuery(
            "predicate_walk", "0", "walk",
            predicate_walk=PredicateWalkArgs(
                entities, tuple(str(p) for p in rng.choice(PREDICATES, int(rng.integers(0, 3)) // 2)),
                int(rng.integers(1, 4)),
            ),
        ),
        SubQuery(
            "temporal_range", "0", "window",
            temporal_range=TemporalRangeArgs(
                f"{start_year}-01-01T00:00:00+00:00", f"{start_year + 2}-01-01T00:00:00+00:00",
                "" if rng.random() < 0.5 else str(rng.choice(WORDS)),
            ),
        ),
        SubQuery("bm25", "1", "lexical", bm25=BM25Args(question)),
        SubQuery("find", "2", "find", find=FindArgs(question)),
    ]


def test_every_fusion_primitive_and_the_fused_result(planted: PlantedDatabase) -> None:
    count = LeakCount()
    per_primitive: Counter[str] = Counter()
    config = every_lane_on(load_config())
    options = FuseOptions(max_results_per_subquery=50, budget_tokens=1_000_000)

    def check(caller: frozenset[str], evidence: list[Evidence] | tuple[Evidence, ...], where: str) -> None:
        for item in evidence:
            per_primitive[where] += 1
            count.check_row(planted.world, caller, [item.entity_id, item.snippet_text, item.body_ref], where)

    async def ask(client: PostgresQueryClient, caller: frozenset[str], queries: list[SubQuery]) -> None:
        for query in queries:
            args = getattr(query, query.type)
            check(caller, await getattr(client, query.type)(args, query.tier, query.source, 50), query.type)
            count.queries += 1
        fused = await fuse(client, queries, options)
        assert not fused.degraded, fused.degraded_reason
        check(caller, fused.evidence, "fused")
        count.queries += 1

    for _ in range(CALLERS):
        caller = random_caller(planted.rng, planted.world)
        client = PostgresQueryClient(planted.database, config=config, embedder=planted.embedder, scopes=sorted(caller))
        for _ in range(QUESTIONS_PER_CALLER // 2):
            question = random_question(planted.rng, planted.world)
            asyncio.run(ask(client, caller, random_subqueries(planted.rng, planted.world, question)))
    print("fusion evidence checked per primitive: " + ", ".join(f"{k} {v}" for k, v in sorted(per_primitive.items())))
    report(count, "fusion primitives")


def test_the_find_statement_keeps_every_vector_index_under_row_security(planted: PlantedDatabase) -> None:
    """The policy filters after the HNSW scan, so the reader's generic plan must use every HNSW index
    the owner's does. Name lookups are another matter: `lower(name) = ANY(...)`, `aliases && ...`,
    `lower(title) = ...` and trigram `%` are not leakproof, so PostgreSQL evaluates them only after
    the policy and cannot drive an index with them; they are reported, not asserted."""
    statement = compile_find(every_lane_on(load_config()))

    def indexes(scopes: list[str] | None) -> set[str]:
        with planted.database.connection(scopes) as connection:
            plan = generic_plan(connection, statement)
        return {node["Index Name"] for node in plan_nodes(plan["Plan"]) if node.get("Index Name")}

    owner, reader = indexes(None), indexes(["acme"])
    print(f"indexes the reader's plan gives up: {', '.join(sorted(owner - reader)) or 'none'}")
    hnsw = {name for name in owner if name.endswith("_hnsw")}
    assert hnsw and hnsw <= reader


# Rows the write side derives, visible to a caller although the rows they come from are not. Each
# query runs as the reader, so `EXISTS` sees only what the caller may read.
DERIVED_WITHOUT_VISIBLE_SOURCE = {
    "chunk of an unreadable document":
        "SELECT count(*) FROM chunk c WHERE NOT EXISTS (SELECT FROM document d WHERE d.id = c.document_id)",
    "posting of an unreadable chunk":
        "SELECT count(*) FROM bm25_posting p WHERE NOT EXISTS (SELECT FROM chunk c WHERE c.id = p.chunk_id)",
    "term no readable chunk contains":
        "SELECT count(*) FROM bm25_term t WHERE NOT EXISTS (SELECT FROM bm25_posting p WHERE p.term = t.term)",
    "mention in an unreadable chunk":
        "SELECT count(*) FROM entity_mention m WHERE NOT EXISTS (SELECT FROM chunk c WHERE c.id = m.chunk_id)",
    "entity no readable chunk mentions":
        "SELECT count(*) FROM entity e WHERE NOT EXISTS (SELECT FROM entity_mention m WHERE m.entity_id = e.id)",
    "fact from an unreadable chunk":
        "SELECT count(*) FROM fact f WHERE f.source_chunk_id IS NOT NULL "
        "AND NOT EXISTS (SELECT FROM chunk c WHERE c.id = f.source_chunk_id)",
    "profile of an unreadable entity":
        "SELECT count(*) FROM profile p WHERE NOT EXISTS (SELECT FROM entity e WHERE e.id = p.entity_id)",
    "community with an unreadable member":
        "SELECT count(*) FROM community c WHERE EXISTS (SELECT FROM unnest(c.members) m(id) "
        "WHERE NOT EXISTS (SELECT FROM entity e WHERE e.id = m.id))",
    "RAPTOR node with an unreadable child":
        "SELECT count(*) FROM raptor_node r WHERE EXISTS (SELECT FROM unnest(r.children) k(id) "
        "WHERE NOT EXISTS (SELECT FROM chunk c WHERE c.id = k.id) "
        "AND NOT EXISTS (SELECT FROM raptor_node n WHERE n.id = k.id))",
}
# Callers of the reliability corpus: public only, each tenant, a tenant without its label, both.
WRITTEN_CALLERS = ([], ["team-a"], ["team-b"], ["team-b", "legal"], ["legal", "team-a", "team-b"])


@pytest.fixture(scope="module")
def written(baseline: Baseline) -> Iterator[Database]:
    """The reliability corpus (public documents, records scoped team-a and team-b + legal) as the
    real write side left it, documents to RAPTOR."""
    with Database(baseline.url) as database:
        yield database


@pytest.mark.slow
@pytest.mark.parametrize("check", sorted(DERIVED_WITHOUT_VISIBLE_SOURCE))
def test_the_write_side_derives_nothing_more_visible_than_its_sources(written: Database, check: str) -> None:
    visible_without_source = {}
    for caller in WRITTEN_CALLERS:
        with written.connection(caller) as connection:
            visible_without_source[",".join(caller) or "(public)"] = connection.execute(
                DERIVED_WITHOUT_VISIBLE_SOURCE[check]
            ).fetchone()[0]
    print(f"{check}: rows visible without a visible source, per caller: {visible_without_source}")
    assert not any(visible_without_source.values())


# BM25 statistics as a caller's ranking sums them, beside the same figures counted over the postings
# and lengths it may read.
VISIBLE_STATISTICS = """
WITH stored AS (
    SELECT term, sum(document_frequency) AS document_frequency FROM bm25_term GROUP BY term
),
counted AS (
    SELECT term, count(*) AS document_frequency FROM bm25_posting GROUP BY term
)
SELECT
    (SELECT count(*) FROM stored FULL JOIN counted USING (term)
     WHERE stored.document_frequency IS DISTINCT FROM counted.document_frequency) AS terms_with_another_df,
    (SELECT coalesce(sum(chunk_count), 0) FROM bm25_corpus) AS stored_chunks,
    (SELECT count(*) FROM bm25_chunk_length) AS counted_chunks,
    (SELECT coalesce(sum(total_length), 0) FROM bm25_corpus) AS stored_length,
    (SELECT coalesce(sum(length), 0) FROM bm25_chunk_length) AS counted_length
"""


@pytest.mark.slow
def test_each_caller_reads_the_bm25_statistics_of_exactly_its_visible_chunks(written: Database) -> None:
    figures = {}
    for caller in WRITTEN_CALLERS:
        with written.connection(caller) as connection:
            figures[",".join(caller) or "(public)"] = connection.execute(VISIBLE_STATISTICS).fetchone()
    print(f"per caller: (terms with another df, stored N, counted N, stored length, counted length): {figures}")
    assert len({counted_chunks for _, _, counted_chunks, _, _ in figures.values()}) > 2
    for caller, (terms_with_another_df, stored_chunks, counted_chunks, stored_length, counted_length) in figures.items():
        assert (terms_with_another_df, stored_chunks, stored_length) == (0, counted_chunks, counted_length), caller
