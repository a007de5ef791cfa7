"""find after the statement: covered sources dropped, greedy packing, fact access recorded."""

from __future__ import annotations

import pytest

from pipelines.read.find import Candidate, find, pack
from pipelines.errors import InputError
from tests.read.planting import EMBEDDER, Planter


@pytest.fixture()
def heron(database):  # type: ignore[no-untyped-def]
    with database.connection() as connection:
        with Planter(connection) as plant:
            plant.entity_kind("project", "A project the company runs.")
            plant.entity_kind("place", "A place: a city or site.")
            plant.document("heron", "Project Heron")
            chunk = plant.chunk("heron", 0, "Project Heron is built in Porto.")
            heron = plant.entity("Project Heron", "project")
            porto = plant.entity("Porto", "place")
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
    result = find(heron, "Where is Project Heron built?", config=config, trace=True, embedder=EMBEDDER)
    assert [c.evidence_id for c in result.covered] == ["chunk:heron#0"]
    evidence = [c.evidence_id for c in result.evidence]
    assert "fact:f-built" in evidence and "chunk:heron#0" not in evidence
    fact = next(c for c in result.evidence if c.fact_id == "f-built")
    assert (fact.stance, fact.source_chunk_id, fact.source_title) == ("settled", "heron#0", "Project Heron")


def test_a_source_ranked_above_its_fact_is_kept(heron, config):
    result = find(heron, "Where is Project Heron built?", config=config, trace=True, embedder=EMBEDDER)
    assert config.plan.order.index("sources") < config.plan.order.index("facts")
    assert not result.covered
    assert {"chunk:heron#0", "fact:f-built"} <= {c.evidence_id for c in result.evidence}


def test_an_attributed_fact_does_not_cover_its_source(heron, config):
    config = facts_first(config)
    with heron.connection() as connection:
        connection.execute("UPDATE fact SET perspective = 'Maren Okafor' WHERE id = 'f-built'")
    result = find(heron, "Where is Project Heron built?", config=config, trace=True, embedder=EMBEDDER)
    assert not result.covered
    assert {"fact:f-built", "chunk:heron#0"} <= {c.evidence_id for c in result.evidence}
    assert next(c for c in result.evidence if c.fact_id == "f-built").stance == "attributed"


def test_find_records_access_of_returned_facts_unless_tracing(heron, config):
    find(heron, "Where is Project Heron built?", config=config, trace=True, embedder=EMBEDDER)
    assert access(heron, "f-built") == 0
    find(heron, "Where is Project Heron built?", config=config, embedder=EMBEDDER)
    find(heron, "Where is Project Heron built?", config=config, embedder=EMBEDDER)
    assert access(heron, "f-built") == 2


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
        find(database, question, config=config, trace=True, embedder=EMBEDDER)
