"""End to end on the demo corpus: the write side's assets build the tables, and every lane of the
one find statement answers from them."""

from __future__ import annotations

import json
from collections.abc import Callable

import dagster as dg
import pytest

from tests import ANALYZE_OWN_SCHEMA, REPOSITORY
from pipelines.read.cacheability import check_cacheability, plan_nodes
from pipelines.read.find import FindResult, find
from pipelines.resources.database import Database
from pipelines.definitions import defs
from pipelines.orchestration.runner import ingest
from tests.read.planting import EMBEDDER, Planter

DEMO = REPOSITORY / "pipelines" / "demo_corpus"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(make_schema_url: Callable[[], str]) -> Database:
    url = make_schema_url()
    with dg.DagsterInstance.ephemeral() as instance:
        ingest(DEMO / "documents", definitions=defs, instance=instance, database_url=url)
    database = Database(url)
    with database.connection() as connection:
        # Statistics for the planner now, rather than whenever autovacuum gets to the new tables.
        connection.execute(ANALYZE_OWN_SCHEMA)
        if not connection.execute("SELECT count(*) FROM session_item").fetchone()[0]:
            with Planter(connection) as plant:
                for line in (DEMO / "session_items.jsonl").read_text().splitlines():
                    item = json.loads(line)
                    plant.session_item(item["id"], item["text"])
    yield database
    database.close()


def ask(demo: Database, config, question: str) -> FindResult:  # type: ignore[no-untyped-def]
    return find(demo, question, config=config, embedder=EMBEDDER)


def lines(result: FindResult, lane: str) -> list[str]:
    return [c.line for c in result.candidates if c.lane == lane]


def test_facts_answer_who_leads_a_project_now(demo, config):
    facts = lines(ask(demo, config, "Who leads Project Heron now?"), "facts")
    assert any("Tomasz Wielgus" in line for line in facts), facts


def test_a_named_document_title_is_direct_source_evidence(demo, config):
    result = ask(demo, config, "What does the Battery Handling Standard require for charging rooms?")
    direct = [c for c in result.candidates if c.lane == "sources" and c.direct]
    assert direct and {c.source_title for c in direct} == {"Battery Handling Standard"}


def test_a_rare_code_reaches_its_incident_log(demo, config):
    sources = [c for c in ask(demo, config, "What does fault code HX-4417 mean?").candidates if c.lane == "sources"]
    assert any("HX-4417" in c.line for c in sources)


@pytest.mark.parametrize(
    ("lane", "question"),
    [
        ("entity_catalog", "Which projects does the company run at the moment?"),
        ("profile", "Who is Saoirse Dunne?"),
        ("communities", "Which teams and sites work on warehouse robots?"),
        ("overview", "What does Quillfern Robotics do overall?"),
        ("working_memory", "Which units and date format does the user prefer?"),
    ],
)
def test_every_lane_answers_on_the_demo_corpus(demo, config, lane, question):
    assert lines(ask(demo, config, question), lane)


def without_fuzzy_mentions(config):  # type: ignore[no-untyped-def]
    return config.model_copy(update={"plan": config.plan.model_copy(update={"fuzzy_mentions": False})})


def test_the_statement_is_plan_cacheable_on_the_demo_corpus(demo, config):
    report = check_cacheability(without_fuzzy_mentions(config), demo, embedder=EMBEDDER)
    results = {result.name: result for result in report.results}
    assert all(result.passed for result in results.values()), report.render()
    used = {node.get("Index Name") for node in plan_nodes(report.generic_plan["Plan"])}
    assert {f"{table}_embedding_hnsw" for table in report.statement.dense_tables} <= used
    assert "bm25_posting_pkey" in used


def test_the_check_says_a_confined_callers_fuzzy_mentions_read_every_entity(demo, config):
    """pg_trgm's `%` is not leakproof, so under row security it cannot probe the trigram index, and
    only a superuser could mark it leakproof: with fuzzy mentions on, the check says so."""
    report = check_cacheability(config, demo, embedder=EMBEDDER)
    failed = [result for result in report.results if not result.passed]
    assert [result.name for result in failed] == ["reaches the indexes"], report.render()
    assert failed[0].detail.startswith("a confined caller reads every row of entity,"), failed[0].detail
