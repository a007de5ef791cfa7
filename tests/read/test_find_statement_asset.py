"""The find_statement asset records the SQL and its generic plan; its check runs the validator."""

from __future__ import annotations

import dagster as dg

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
