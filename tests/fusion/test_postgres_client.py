"""The PostgreSQL client's primitives against a real, freshly migrated database with planted rows."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

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
from pipelines.fusion.postgres_client import PostgresQueryClient, run_cancellable
from pipelines.fusion.primitives import PRIMITIVES, primitive_statement
from pipelines.read.cacheability import generic_plan, reaches_indexes
from pipelines.read.execute import run_statement
from pipelines.resources.database import Database
from pipelines.resources.embedder import LocalMiniLMEmbedder
from pipelines.write.documents import bm25_sql
from pipelines.write.documents.bm25 import apply_statistics
from pipelines.write.documents.chunking import indexed_text

# A small company graph: Alice -works_at-> Acme <-works_at- Bob -mentors-> Carol -knows-> Alice,
# and Dave, who worked at Acme only in the first half of 2019. Alice was once recorded "on leave",
# a belief since closed (recorded_to set), which no primitive may return.
ENTITIES = [
    ("e-alice", "Alice", "person"),
    ("e-acme", "Acme", "organization"),
    ("e-bob", "Bob", "person"),
    ("e-carol", "Carol", "person"),
    ("e-dave", "Dave", "person"),
    ("e-erin", "Erin", "person"),
]
# (id, subject, predicate, object, value, statement, valid_from, valid_to, closed)
FACTS = [
    ("f:alice-acme", "e-alice", "works_at", "e-acme", None, "Alice works at Acme", "2020-01-01", None, False),
    ("f:bob-acme", "e-bob", "works_at", "e-acme", None, "Bob works at Acme", "2021-03-01", None, False),
    ("f:bob-carol", "e-bob", "mentors", "e-carol", None, "Bob mentors Carol", None, None, False),
    ("f:carol-alice", "e-carol", "knows", "e-alice", None, "Carol knows Alice", None, None, False),
    ("f:dave-acme", "e-dave", "works_at", "e-acme", None, "Dave worked at Acme", "2019-01-01", "2019-07-01", False),
    ("f:alice-active", "e-alice", "status", None, "active", "Alice is active", None, None, False),
    ("f:alice-leave", "e-alice", "status", None, "on leave", "Alice is on leave", "2019-02-01", None, True),
    ("f:erin-acme", "e-erin", "works_at", "e-acme", None, "Erin joins Acme", "2031-01-01", None, False),
]


def plant(database: Database, entities: Sequence[tuple], facts: Sequence[tuple]) -> None:
    """Insert ENTITIES- and FACTS-shaped rows; every fact was recorded in 2018, closed ones in 2024."""
    with database.connection() as connection, connection.cursor() as cursor:
        kinds = sorted({kind for _, _, kind in entities})
        cursor.executemany("INSERT INTO entity_kind (name) VALUES (%s) ON CONFLICT DO NOTHING", [(kind,) for kind in kinds])
        cursor.executemany(
            "INSERT INTO entity (id, name, kind, normalized_name) VALUES (%s, %s, %s, lower(%s))",
            [(id_, name, kind, name) for id_, name, kind in entities],
        )
        cursor.executemany(
            """
            INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement,
                              valid_from, valid_to, recorded_from, recorded_to)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, '2018-01-01',
                    CASE WHEN %s THEN timestamptz '2024-01-01' END)
            """,
            facts,
        )


# A small document corpus, one chunk per document: each question has one clear answer, and some
# share words (Porto, warehouse, Heron) so rankings have a tail.
CORPUS = [
    ("heron-arms", "Heron picking arms", "The Heron robotic arms pick mixed cases in the Porto warehouse and were upgraded with new grippers in March."),
    ("heron-faults", "Heron fault log", "Fault code HX-4417 on a Heron arm means the wrist encoder lost calibration; technicians recalibrate it on site."),
    ("lantern-drones", "Lantern drone survey", "Lantern drones survey rooftops for solar panel cracks and fly only below the airspace ceiling of 120 metres."),
    ("lantern-airspace", "Lantern airspace review", "The aviation authority approved Lantern flights over the harbour after a review of the drone noise and safety cases."),
    ("mooring-buoys", "Mooring buoy network", "Project Mooring deploys sensor buoys that measure wave height and water temperature along the northern coast."),
    ("mooring-funding", "Mooring funding round", "Mooring raised a second funding round from a marine research foundation to build forty more buoys."),
    ("tessel-batteries", "Tessel battery packs", "Tessel designs lithium iron phosphate battery packs for warehouse robots with a hot swap tray."),
    ("battery-handling", "Battery handling standard", "Damaged lithium batteries must be stored in a sand filled container and never charged again."),
    ("cold-chain", "Corvane cold chain audit", "The audit found two reefer trucks whose temperature loggers drifted by three degrees during the summer."),
    ("supplier-register", "Supplier register", "Vandermeer Plastics in Eindhoven supplies gripper pads and cable housings under a three year contract."),
    ("mentorship", "Mentorship programme", "New engineers are paired with a mentor for six months and meet every second week to review their projects."),
    ("leadership", "Leadership decisions 2025", "In 2025 the board moved the robotics headquarters from Lisbon to Porto to be closer to the main warehouse."),
    ("customer-accounts", "Customer accounts", "Brightwell Grocers is the largest customer and renews its warehouse automation contract every January."),
    ("safety-training", "Safety training", "Every warehouse worker completes forklift and robot safety training before entering the picking floor."),
    ("office-kitchen", "Office kitchen rules", "Label your food in the shared fridge and empty the dishwasher when the green light is on."),
    ("solar-roof", "Solar roof project", "The Porto warehouse roof carries eight hundred solar panels that cover a third of the robots' power use."),
]
QUESTIONS = [
    "What does fault code HX-4417 mean?",
    "Which supplier is based in Eindhoven?",
    "How should damaged lithium batteries be stored?",
    "Where are the Heron arms used?",
    "What do the Mooring buoys measure?",
    "Who approved the Lantern drone flights?",
]


def plant_corpus(database: Database, documents: Sequence[tuple[str, str, str]]) -> None:
    """Documents of one chunk each, embedded and BM25-indexed as the write side does it."""
    indexed = [indexed_text(title, text) for _, title, text in documents]
    vectors = LocalMiniLMEmbedder().embed(indexed)
    chunk_ids = [f"{document_id}#0" for document_id, _, _ in documents]
    with database.connection() as connection:
        for (document_id, title, text), chunk_id, vector in zip(documents, chunk_ids, vectors, strict=True):
            connection.execute(
                "INSERT INTO document (id, title, body, content_hash) VALUES (%s, %s, %s, %s)",
                (document_id, title, text, f"hash-{document_id}"),
            )
            connection.execute(
                "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, embedding)"
                " VALUES (%s, %s, 0, %s, %s, %s, %s)",
                (chunk_id, document_id, text, len(text.split()), f"hash-{chunk_id}", vector),
            )
        changes = connection.execute(
            bm25_sql.INDEX_CHUNKS,
            {"chunk_ids": chunk_ids, "indexed_texts": indexed, "text_search_config": bm25_sql.TEXT_SEARCH_CONFIG},
        ).fetchall()
        apply_statistics(connection, changes)


@pytest.fixture()
def client(database: Database) -> PostgresQueryClient:
    plant(database, ENTITIES, FACTS)
    return PostgresQueryClient(database)


def ids(evidence: Sequence[Evidence]) -> list[str]:
    """The entity ids the evidence names (its ids are `entity:<entity id>`)."""
    assert all(item.entity_id.startswith("entity:") for item in evidence)
    return [item.entity_id.removeprefix("entity:") for item in evidence]


def test_entity_state_returns_one_evidence_per_named_entity_with_its_live_statements(client):
    found = asyncio.run(client.entity_state(EntityStateArgs(["e-alice", "e-nobody"]), "0", "state", 10))
    assert ids(found) == ["e-alice"]
    [alice] = found
    assert (alice.tier, alice.source) == ("0", "state")
    # Subject and object facts alike; the closed "on leave" belief is not part of the state.
    assert alice.snippet_text == "Carol knows Alice; Alice is active; Alice works at Acme"


def test_entity_state_names_an_entity_whose_facts_have_all_ended(client):
    [dave] = asyncio.run(client.entity_state(EntityStateArgs(["e-dave"]), "0", "state", 10))
    assert dave.snippet_text == "Dave"


def test_entity_state_respects_the_limit(client):
    found = asyncio.run(client.entity_state(EntityStateArgs(["e-alice", "e-bob", "e-carol"]), "0", "s", 2))
    assert ids(found) == ["e-alice", "e-bob"]


def test_predicate_walk_of_zero_hops_walks_one(client):
    found = asyncio.run(client.predicate_walk(PredicateWalkArgs(["e-alice"], max_hops=0), "0", "walk", 10))
    # Both directions: Alice -> Acme and Carol -> Alice. The seed itself is not evidence.
    assert ids(found) == ["e-acme", "e-carol"]
    assert [item.snippet_text for item in found] == ["Alice works at Acme", "Carol knows Alice"]


def test_predicate_walk_reaches_further_with_more_hops_and_ranks_nearer_first(client):
    found = asyncio.run(client.predicate_walk(PredicateWalkArgs(["e-alice"], max_hops=2), "0", "walk", 10))
    assert ids(found) == ["e-acme", "e-carol", "e-bob"]
    assert [item.score for item in found] == [0.5, 0.5, pytest.approx(1 / 3)]
    # Bob is two hops out through Acme and through Carol; the snippet is the arriving fact of
    # lowest id, so it is stable.
    assert found[2].snippet_text == "Bob works at Acme"
    # Dave's tie to Acme ended and Erin's has not begun: neither is live, so neither is reached.
    assert "e-dave" not in ids(found) and "e-erin" not in ids(found)


def test_predicate_walk_only_follows_the_given_predicates(client):
    args = PredicateWalkArgs(["e-carol"], predicates=["works_at"], max_hops=3)
    assert asyncio.run(client.predicate_walk(args, "0", "walk", 10)) == []
    args = PredicateWalkArgs(["e-alice"], predicates=["works_at"], max_hops=3)
    assert ids(asyncio.run(client.predicate_walk(args, "0", "walk", 10))) == ["e-acme", "e-bob"]


def test_predicate_walk_stops_at_the_hop_limit_on_a_cycle(client):
    # Alice -> Acme <- Bob -> Carol -> Alice is a cycle; a long walk still terminates, each once.
    found = asyncio.run(client.predicate_walk(PredicateWalkArgs(["e-alice"], max_hops=8), "0", "walk", 10))
    assert ids(found) == ["e-acme", "e-carol", "e-bob"]


def test_temporal_range_returns_entities_of_facts_valid_in_the_window(client):
    args = TemporalRangeArgs("2019-03-01T00:00:00Z", "2019-04-01T00:00:00Z")
    found = asyncio.run(client.temporal_range(args, "0", "when", 10))
    # Only Dave's 2019 employment overlaps; Alice's closed "on leave" belief would, but is not believed.
    assert ids(found) == ["e-acme", "e-dave"]
    assert {item.snippet_text for item in found} == {"Dave worked at Acme"}


def test_temporal_range_window_is_half_open_and_excludes_facts_outside_it(client):
    # Dave's fact ends 2019-07-01 and Alice's starts 2020-01-01: a window between them is empty.
    args = TemporalRangeArgs("2019-07-01T00:00:00Z", "2020-01-01T00:00:00Z")
    assert asyncio.run(client.temporal_range(args, "0", "when", 10)) == []


def test_temporal_range_topic_filters_by_stemmed_words_of_the_statement(client):
    args = TemporalRangeArgs("2019-01-01T00:00:00Z", "2022-01-01T00:00:00Z", topic="working")
    found = asyncio.run(client.temporal_range(args, "0", "when", 10))
    # Acme takes part in three matching facts and ranks first; "Bob mentors Carol" has no dates.
    assert ids(found) == ["e-acme", "e-alice", "e-bob", "e-dave"]
    assert found[0].snippet_text == "Dave worked at Acme; Alice works at Acme; Bob works at Acme"
    assert found[0].score == pytest.approx(3 / 4)


def test_closed_facts_are_never_returned(client, database):
    with database.connection() as connection:
        connection.execute("UPDATE fact SET recorded_to = now() WHERE id = 'f:alice-acme'")
    state = asyncio.run(client.entity_state(EntityStateArgs(["e-alice"]), "0", "s", 10))
    assert "Alice works at Acme" not in state[0].snippet_text
    walk = asyncio.run(client.predicate_walk(PredicateWalkArgs(["e-alice"], ["works_at"]), "0", "w", 10))
    assert walk == []
    window = TemporalRangeArgs("2020-01-01T00:00:00Z", "2020-02-01T00:00:00Z")
    assert asyncio.run(client.temporal_range(window, "0", "t", 10)) == []


def test_primitives_fuse_through_the_engine(client):
    queries = [
        SubQuery("entity_state", "0", "named", entity_state=EntityStateArgs(["e-alice"])),
        SubQuery("predicate_walk", "0", "walk", predicate_walk=PredicateWalkArgs(["e-alice"], max_hops=2)),
    ]
    result = asyncio.run(fuse(client, queries, FuseOptions()))
    assert not result.degraded
    assert ids(list(result.evidence)) == ["e-alice", "e-acme", "e-carol", "e-bob"]


SLEEP_MARKER = "lanegraph-cancel-probe"


def sleeping_statements(database: Database) -> int:
    with database.connection() as connection:
        return connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s AND pid <> pg_backend_pid()",
            (f"%{SLEEP_MARKER}%",),
        ).fetchone()[0]


def test_cancelling_the_caller_cancels_the_statement_on_the_server(database):
    async def cancel_a_sleep() -> int:
        sleeping = asyncio.ensure_future(
            run_cancellable(database, lambda connection: connection.execute(f"SELECT pg_sleep(60) /* {SLEEP_MARKER} */"))
        )
        while await asyncio.to_thread(sleeping_statements, database) == 0:
            await asyncio.sleep(0.05)
        sleeping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sleeping
        # Checked before asyncio.run returns: leaving it waits for worker threads to finish.
        for _ in range(200):
            if await asyncio.to_thread(sleeping_statements, database) == 0:
                break
            await asyncio.sleep(0.05)
        return await asyncio.to_thread(sleeping_statements, database)

    # The server ends the statement on the cancel request instead of sleeping out its minute.
    assert asyncio.run(cancel_a_sleep()) == 0

    async def use_every_connection() -> list[list[tuple]]:
        return await asyncio.gather(*(run_cancellable(database, select_one) for _ in range(8)))

    # More statements than the pool has connections: the cancelled one went back to the pool usable.
    assert asyncio.run(use_every_connection()) == [[(1,)]] * 8


def select_one(connection) -> list[tuple]:
    return connection.execute("SELECT 1").fetchall()


def test_a_statement_over_its_timeout_fails_and_the_connection_is_reused(database):
    sleep = lambda connection: connection.execute("SELECT pg_sleep(5)")  # noqa: E731
    with pytest.raises(Exception, match="statement timeout"):
        asyncio.run(run_cancellable(database, sleep, timeout_seconds=0.2))
    assert asyncio.run(run_cancellable(database, select_one)) == [(1,)]


@pytest.mark.parametrize("name", PRIMITIVES)
def test_each_primitive_has_a_generic_plan_that_reaches_the_indexes(database, name):
    # The find statement's rules: a plan exists before any value is known (so one prepared
    # statement serves every call), and every table can be read through an index.
    statement = primitive_statement(name).statement
    with database.connection() as connection:
        verdict = reaches_indexes(generic_plan(connection, statement), statement)
    assert verdict.passed, verdict.detail


def test_temporal_range_reads_believed_validity_through_its_gist_index(client, database):
    statement = primitive_statement("temporal_range").statement
    with database.connection() as connection:
        plan = generic_plan(connection, statement)
    assert "fact_validity_idx" in str(plan)


def test_one_prepared_statement_serves_every_limit(client, database):
    statement = primitive_statement("entity_state").statement
    with database.connection() as connection:
        for limit in (1, 300, 70_000):  # int2, int4 and int8 by size, were they sent untyped
            run_statement(connection, statement, {"entity_ids": ["e-alice"], "entity_state_limit": limit})
        prepared = connection.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = %s", (statement.sql,)
        ).fetchone()[0]
    assert prepared == 1


def test_generic_and_custom_plans_return_the_same_rows(client, database):
    statement = primitive_statement("predicate_walk").statement
    values = {"seeds": ["e-alice"], "predicates": [], "max_hops": 3, "predicate_walk_limit": 10}
    rows = {}
    for mode in ("force_generic_plan", "force_custom_plan"):
        with database.connection() as connection:
            connection.execute("SELECT set_config('plan_cache_mode', %s, true)", (mode,))
            rows[mode] = run_statement(connection, statement, values)
    assert rows["force_generic_plan"] == rows["force_custom_plan"] != []


def test_a_scoped_client_sees_only_rows_within_its_scopes(client, database):
    with database.connection() as connection:
        connection.execute("UPDATE entity SET scopes = '{north}' WHERE id = 'e-bob'")
        connection.execute("UPDATE fact SET scopes = '{north}' WHERE subject_id = 'e-bob'")
    named = EntityStateArgs(["e-alice", "e-bob"])
    public = PostgresQueryClient(database, scopes=[])
    north = PostgresQueryClient(database, scopes=["north"])
    assert ids(asyncio.run(public.entity_state(named, "0", "s", 10))) == ["e-alice"]
    assert ids(asyncio.run(north.entity_state(named, "0", "s", 10))) == ["e-alice", "e-bob"]
    walk = PredicateWalkArgs(["e-alice"], max_hops=3)
    assert ids(asyncio.run(public.predicate_walk(walk, "0", "w", 10))) == ["e-acme", "e-carol"]


@pytest.fixture(scope="module")
def corpus(make_database) -> Database:  # type: ignore[no-untyped-def]
    database = make_database()
    plant_corpus(database, CORPUS)
    return database


def test_bm25_returns_the_planted_chunk_under_the_find_statements_chunk_id(corpus):
    client = PostgresQueryClient(corpus)
    found = asyncio.run(client.bm25(BM25Args("fault code HX-4417"), "1", "words", 10))
    best = found[0]
    assert (best.entity_id, best.tier, best.source, best.body_ref) == ("chunk:heron-faults#0", "1", "words", "heron-faults")
    assert best.snippet_text.startswith("Fault code HX-4417 on a Heron arm")
    assert [item.score for item in found] == sorted((item.score for item in found), reverse=True)


def test_bm25_respects_the_limit(corpus):
    client = PostgresQueryClient(corpus)
    assert len(asyncio.run(client.bm25(BM25Args("Porto warehouse solar"), "1", "words", 2))) == 2


def test_find_returns_the_statements_rows_best_first(corpus):
    client = PostgresQueryClient(corpus)
    found = asyncio.run(client.find(FindArgs("Where are the Heron arms used?", k=4), "2", "find", 50))
    assert [item.entity_id for item in found][:2] == ["chunk:heron-arms#0", "chunk:heron-faults#0"]
    assert all((item.tier, item.source) == ("2", "find") for item in found)
    assert found[0].snippet_text.startswith("Heron picking arms: The Heron robotic arms")
    assert [item.score for item in found] == sorted((item.score for item in found), reverse=True)
    limited = asyncio.run(client.find(FindArgs("Where are the Heron arms used?", k=4), "2", "find", 1))
    assert limited == found[:1]


def test_find_and_bm25_name_a_chunk_alike_so_the_engine_keeps_one(corpus):
    queries = [
        SubQuery("find", "2", "find", find=FindArgs("What does fault code HX-4417 mean?", k=4)),
        SubQuery("bm25", "1", "words", bm25=BM25Args("fault code HX-4417")),
    ]
    result = asyncio.run(fuse(PostgresQueryClient(corpus), queries))
    assert not result.degraded
    hits = [item for item in result.evidence if item.entity_id == "chunk:heron-faults#0"]
    # The lower tier wins the duplicate: BM25's copy (tier 1) over find's (tier 2).
    assert [(item.source, item.tier) for item in hits] == [("words", "1")]
