"""The find_statement asset records the SQL and its generic plan; its check runs the validator."""

from __future__ import annotations

import dagster as dg
import sqlglot
from sqlglot import exp

from pipelines.definitions import defs
from pipelines.read.compiler import compile_find
from pipelines.read.dialect import PgVector
from pipelines.defs.read.find_statement import find_statement, find_statement_is_plan_cacheable
from pipelines.resources.database import DatabaseResource


def test_materializing_find_statement_records_sql_plan_and_a_passing_check(world):
    result = dg.materialize(
        [find_statement, find_statement_is_plan_cacheable],
        resources={"database": DatabaseResource(database_url=world.url)},
        raise_on_error=True,
    )
    metadata = result.asset_materializations_for_node("find_statement")[0].metadata
    assert "ordered_context AS MATERIALIZED" in metadata["sql"].value
    assert "Index Scan using fact_embedding_hnsw on fact" in metadata["generic_plan"].value
    [check] = result.get_asset_check_evaluations()
    assert check.passed, check.description
    assert set(check.metadata) >= {"shape only", "reaches the indexes", "prepared once", "generic equals custom"}


# Which assets write each table the find statement reads (chunk and entity/fact rows get their
# embeddings from a second asset).
WRITERS = {
    "bm25": {"bm25_index"},
    "document": {"documents"},
    "chunk": {"chunks", "chunk_embeddings"},
    "entity": {"entities_and_facts", "entity_graph"},
    "fact": {"entities_and_facts", "entity_graph"},
    "live_fact": {"entities_and_facts", "entity_graph"},
    "entity_alias": {"entities_and_facts"},
    "entity_kind": {"entities_and_facts"},
    "entity_mention": {"entities_and_facts"},
    "title_link": {"title_links"},
    "community": {"communities"},
    "profile": {"entity_profiles"},
    "raptor_node": {"raptor_levels"},
    "session_item": {"session_items"},
}


def test_every_writer_of_a_table_find_reads_is_a_parent_and_the_eval_is_downstream(config):
    tree = sqlglot.parse_one(compile_find(config).sql, dialect=PgVector)
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    tables = {table.name for table in tree.find_all(exp.Table)} - ctes
    writers = set().union(*(WRITERS["bm25" if table.startswith("bm25_") else table] for table in tables))
    graph = defs.resolve_asset_graph()
    parents = {key.to_user_string() for key in graph.get(dg.AssetKey("find_statement")).parent_keys}
    assert writers <= parents, sorted(writers - parents)
    assert dg.AssetKey("find_statement") in graph.get(dg.AssetKey("retrieval_eval")).parent_keys
