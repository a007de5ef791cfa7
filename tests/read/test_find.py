"""find after the statement: covered sources dropped, greedy packing, read-only, access recorded after."""

from __future__ import annotations

import pytest

from contextlib import contextmanager

from pipelines.read.access import record_access
from pipelines.read.find import Candidate, find, pack
from pipelines.errors import InputError
from tests.read.planting import EMBEDDER, Planter, plant_heron


@pytest.fixture()
def heron(database):  # type: ignore[no-untyped-def]
    with database.connection() as connection:
        with Planter(connection) as plant:
            chunk, heron, porto = plant_heron(plant)
            plant.fact("f-built", heron, "built_in", "Project Heron is built in Porto.", object_id=porto,
                       source_chunk_id=chunk, document_id="heron")
    return database


def access(database, fact_id: str) -> int:  # type: ignore[no-untyped-def]
    with database.connection() as connection:
        return connection.execute("SELECT access_count FROM fact WHERE id = %s", (fact_id,)).fetchone()[0]


def facts_first(config):  # type: ignore[no-untyped-def]
    order = ["facts", *(lane for lane in config.plan.order if lane != "facts")]
    return config.model_copy(update={"plan": config.plan.model_copy(update={"order": order})})


def test_a_source_covered_by_a_better_ranked_settled_fact_is_dropped(heron, config):
    config = facts_first(config)
    result = find(heron, "Where is Project Heron built?", config=config, embedder=EMBEDDER)
    assert [c.evidence_id for c in result.covered] == ["chunk:heron#0"]
    evidence = [c.evidence_id for c in result.evidence]
    assert "fact:f-built" in evidence and "chunk:heron#0" not in evidence
    fact = next(c for c in result.evidence if c.fact_id == "f-built")
    assert (fact.stance, fact.source_chunk_id, fact.source_title) == ("settled", "heron#0", "Project Heron")


def test_a_source_ranked_above_its_fact_is_kept(heron, config):
    result = find(heron, "Where is Project Heron built?", config=config, embedder=EMBEDDER)
    assert config.plan.order.index("sources") < config.plan.order.index("facts")
    assert not result.covered
    assert {"chunk:heron#0", "fact:f-built"} <= {c.evidence_id for c in result.evidence}


def test_an_attributed_fact_does_not_cover_its_source(heron, config):
    config = facts_first(config)
    with heron.connection() as connection:
        connection.execute("UPDATE fact SET perspective = 'Maren Okafor' WHERE id = 'f-built'")
    result = find(heron, "Where is Project Heron built?", config=config, embedder=EMBEDDER)
    assert not result.covered
    assert {"fact:f-built", "chunk:heron#0"} <= {c.evidence_id for c in result.evidence}
    assert next(c for c in result.evidence if c.fact_id == "f-built").stance == "attributed"


def test_find_writes_nothing_and_the_caller_records_access_on_the_primary(heron, config):
    def last_accessed():  # type: ignore[no-untyped-def]
        with heron.connection() as connection:
            return connection.execute("SELECT last_accessed FROM fact WHERE id = 'f-built'").fetchone()[0]

    first = find(heron, "Where is Project Heron built?", config=config, embedder=EMBEDDER)
    assert "f-built" in first.accessed_fact_ids
    assert access(heron, "f-built") == 0 and last_accessed() is None
    second = find(heron, "Where is Project Heron built?", config=config, embedder=EMBEDDER)
    assert record_access(heron, [first, second]) == 1
    assert access(heron, "f-built") == 2
    recorded = last_accessed()
    assert recorded is not None
    record_access(heron, [second])
    assert access(heron, "f-built") == 3 and last_accessed() > recorded


def test_a_confined_caller_records_access_only_to_facts_it_may_read(heron, config):
    with heron.connection() as connection:
        connection.execute("UPDATE fact SET scopes = '{board}' WHERE id = 'f-built'")
    board = find(heron, "Where is Project Heron built?", config=config, embedder=EMBEDDER, scopes=["board"])
    assert record_access(heron, [board], scopes=["staff"]) == 0
    assert record_access(heron, [board], scopes=["board"]) == 1


def test_find_runs_in_a_read_only_transaction(heron, config):
    class Held:
        """Lends find one connection, so the transaction it leaves open can be inspected."""

        def __init__(self, connection):  # type: ignore[no-untyped-def]
            self._connection = connection

        @contextmanager
        def connection(self, *_, **__):  # type: ignore[no-untyped-def]
            yield self._connection

    with heron.connection() as connection:
        find(Held(connection), "Where is Project Heron built?", config=config, embedder=EMBEDDER)
        assert connection.execute("SHOW transaction_read_only").fetchone()[0] == "on"
        connection.rollback()


def test_the_budget_is_packed_greedily_skipping_what_does_not_fit():
    def candidate(rank: int, line: str) -> Candidate:
        return Candidate(rank, "sources", "sources", f"chunk:{rank}", line, (), None, None, None, None,
                         None, None, False, None)

    big, small, medium = candidate(0, "x" * 400), candidate(1, "y" * 40), candidate(2, "z" * 80)
    taken, skipped, used = pack([big, small, medium], budget=40)
    assert taken == (small, medium) and skipped == (big,) and used == 30


@pytest.mark.parametrize("question", ["", "   ", "nul \x00 byte", "x" * 4001])
def test_unusable_questions_are_refused_with_a_clear_error(database, config, question):
    with pytest.raises(InputError):
        find(database, question, config=config, embedder=EMBEDDER)


def test_concurrent_finds_record_overlapping_access_without_deadlock(heron):  # type: ignore[no-untyped-def]
    """Clients of a server ask alike questions at once; each recording locks its facts in id order."""
    import random
    import threading
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Handed:
        accessed_fact_ids: tuple[str, ...]

    with heron.connection() as connection:
        with Planter(connection) as plant:
            subject = plant.entity("Ledger", "project")
            fact_ids = [plant.fact(f"f-{n}", subject, "note", f"Ledger note {n}.", object_value=str(n)) for n in range(30)]
    failures: list[BaseException] = []

    def record(seed: int) -> None:
        order = random.Random(seed)
        try:
            for _ in range(15):
                record_access(heron, [Handed(tuple(order.sample(fact_ids, len(fact_ids))))])  # type: ignore[list-item]
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=record, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert {access(heron, fact_id) for fact_id in fact_ids} == {4 * 15}
