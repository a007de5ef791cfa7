"""The find statement as an asset: lanes.yaml compiled, with its SQL and generic plan on record,
and the cacheability validator as its check."""

from __future__ import annotations


import dagster as dg

from pipelines.config import LanegraphConfig, load_config
from pipelines.read.cacheability import check_cacheability, failure_summary, generic_plan
from pipelines.read.compiler import compile_find
from pipelines.read.explain import plan_lines
from pipelines.orchestration.groups import READ_GROUP
from pipelines.resources.database import DatabaseResource
from pipelines.errors import LanegraphError


# Every asset that writes a table (or column) the statement reads, so the statement, and the
# evaluation downstream of it, show as stale when any of them changes. The graph-wide ones also
# fill what the check proves the plan on (an empty corpus cannot show the BM25 posting index).
READ_ASSETS = (
    "documents", "chunks", "chunk_embeddings", "bm25_index", "entities_and_facts",
    "entity_graph", "title_links", "communities", "entity_profiles", "raptor_levels", "session_items",
)


def _config(database: DatabaseResource) -> LanegraphConfig:
    return load_config(database.settings_path())


@dg.asset(
    group_name=READ_GROUP,
    deps=list(READ_ASSETS),
    description="The one SQL statement find runs: lanes.yaml and sql_templates/lanes compiled by sqlglot.",
)
def find_statement(database: DatabaseResource) -> dg.MaterializeResult:
    statement = compile_find(_config(database))
    with database.connection() as connection:
        plan = generic_plan(connection, statement)
    return dg.MaterializeResult(
        metadata={
            "sql": dg.MetadataValue.md(f"```sql\n{statement.annotated_sql()}```"),
            "generic_plan": dg.MetadataValue.md("```\n" + "\n".join(plan_lines(plan["Plan"])) + "\n```"),
            "lanes": dg.MetadataValue.text(", ".join(lane.name for lane in statement.lanes)),
            "parameters": dg.MetadataValue.int(len(statement.binds)),
            "hnsw_rankings": dg.MetadataValue.text(", ".join(statement.dense_tables)),
            "sql_characters": dg.MetadataValue.int(len(statement.sql)),
        }
    )


@dg.asset_check(
    asset=find_statement,
    description="Plan cacheability: shape-only text, binds only, schema checked, index "
    "paths in the generic plan, one prepared statement for every question, generic = custom.",
)
def find_statement_is_plan_cacheable(database: DatabaseResource) -> dg.AssetCheckResult:
    try:
        report = check_cacheability(_config(database), database.get_database())
    except LanegraphError as error:
        return dg.AssetCheckResult(passed=False, description=str(error))
    return dg.AssetCheckResult(
        passed=report.passed,
        description=failure_summary(report) or "all six properties hold",
        metadata={result.name: dg.MetadataValue.text(("ok: " if result.passed else "FAIL: ") + result.detail) for result in report.results},
    )
