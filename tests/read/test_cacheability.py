"""The six plan-cacheability properties, proven on a database with rows in every lane."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector

from pipelines.lanes_config import template_path
from pipelines.read.cacheability import check_cacheability, generic_plan, plan_nodes, reaches_indexes
from pipelines.read.compiler import bind_values, compile_find
from pipelines.read.execute import run_statement
from pipelines.resources.database import connect
from tests.read.planting import EMBEDDER, vector

QUESTIONS = [
    "Who does Zorblax work with?",
    "What happened to QX-7781?",
    "What did the Corvane Cold Chain Audit conclude?",
    "Which projects are running right now?",
    "What does Quillfern Robotics build?",
    "Who looks after temperature logging on reefer trucks?",
    "Tell me about Saoirse Dunne and who she mentors.",
    "Which units does the user prefer in answers?",
]


def dedicated(world) -> psycopg.Connection:  # type: ignore[no-untyped-def]
    connection = connect(world.url, autocommit=True)
    register_vector(connection)
    return connection


def prepared_statements(connection: psycopg.Connection, sql: str) -> list[tuple[str, int]]:
    return connection.execute(
        "SELECT name, generic_plans + custom_plans FROM pg_prepared_statements WHERE statement = %s", (sql,)
    ).fetchall()


def test_the_validator_proves_all_six_properties(world, config):
    report = check_cacheability(config, world, embedder=EMBEDDER, questions=QUESTIONS)
    assert report.passed, report.render()
    assert [r.name for r in report.results] == [
        "binds only", "schema checked", "shape only", "reaches the indexes", "prepared once", "generic equals custom",
    ]


def test_the_generic_plan_reaches_every_hnsw_index_and_the_bm25_postings(world, config):
    # enable_seqscan is off inside the check: these tables hold a handful of rows, where a
    # sequential scan is honestly cheaper; the question is whether the index path exists.
    statement = compile_find(config)
    with dedicated(world) as connection:
        plan = generic_plan(connection, statement)
    used = {node.get("Index Name") for node in plan_nodes(plan["Plan"])}
    assert {
        "fact_embedding_hnsw", "entity_embedding_hnsw", "chunk_embedding_hnsw", "entity_kind_embedding_hnsw",
        "session_item_embedding_hnsw", "profile_embedding_hnsw", "community_embedding_hnsw", "bm25_posting_pkey",
    } <= used


def test_a_confined_callers_plan_must_reach_the_indexes_too(world, config, tmp_path: Path):
    """Row security refuses an index probe whose join condition calls a function that is not
    leakproof: the sources lane's bridge once joined pages on `title_lower = fold(name)`, which a
    confined caller could only answer by reading every document."""
    sources = tmp_path / "sources"
    shutil.copytree(template_path(config.lanes["sources"].template), sources)
    bridge = sources / "bridge.sql"
    folded_in_the_join = bridge.read_text().replace(
        "lanegraph_fold_accents(seed_entity.name)", "seed_entity.name"
    ).replace(
        "document.title_lower = linked_name.title_key", "document.title_lower = lanegraph_fold_accents(linked_name.title_key)"
    ).replace("WHERE document.title_lower = ANY(ARRAY(SELECT linked_name.title_key FROM linked_name))\n      AND", "WHERE")
    assert folded_in_the_join != bridge.read_text()
    bridge.write_text(folded_in_the_join)
    # The turns part left out: in this world of a few rows the generic plan reads the few documents
    # whole for the owner as well, which hides the confined-only read this test is about (at
    # LoCoMo's 2,760 turns the plan probes document_turn_idx).
    config = config.model_copy(update={"plan": config.plan.model_copy(update={"turns": False})})
    lanes = {**config.lanes, "sources": config.lanes["sources"].model_copy(update={"template": str(sources)})}
    for lane_config, passes in ((config, True), (config.model_copy(update={"lanes": lanes}), False)):
        statement = compile_find(lane_config, cached=False)
        with world.connection([]) as confined:
            confined_plan = generic_plan(confined, statement)
        with dedicated(world) as connection:
            owner_plan = generic_plan(connection, statement)
        assert reaches_indexes(owner_plan, statement).passed
        verdict = reaches_indexes(owner_plan, statement, confined_plan=confined_plan)
        assert verdict.passed is passes, verdict.detail
    assert "a confined caller reads every row of document," in verdict.detail


def test_one_prepared_statement_serves_every_question(world, config):
    statement = compile_find(config)
    with dedicated(world) as connection:
        for question in QUESTIONS:
            for k in (None, 3, 70000):
                run_statement(connection, statement, bind_values(config, question=question, query_vector=vector(question), k=k))
        [(name, executions)] = prepared_statements(connection, statement.sql)
    assert executions == len(QUESTIONS) * 3


def test_untyped_python_ints_would_split_the_prepared_statement(world, config):
    """Why every integer is sent as int8: psycopg picks int2 for 3 and int4 for 70000."""
    statement = compile_find(config)
    with dedicated(world) as connection:
        for k in (3, 70000):
            typed = statement.parameters(bind_values(config, question="x", query_vector=vector("x"), k=k))
            plain = [int(value) if type(value).__name__ == "Int8" else value for value in typed]
            with psycopg.RawCursor(connection) as cursor:
                cursor.execute(statement.sql, plain, prepare=True)
        assert len(prepared_statements(connection, statement.sql)) == 2


def test_generic_plan_rows_equal_custom_plan_rows(world, config):
    statement = compile_find(config)
    with dedicated(world) as connection:
        for question in QUESTIONS:
            values = bind_values(config, question=question, query_vector=vector(question))
            with connection.transaction():
                connection.execute("SET LOCAL plan_cache_mode = force_generic_plan")
                generic = run_statement(connection, statement, values)
                connection.execute("SET LOCAL plan_cache_mode = force_custom_plan")
                custom = run_statement(connection, statement, values)
            assert generic == custom and generic, question
