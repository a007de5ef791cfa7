"""ANN windows: every dense ranking reaches its HNSW index in the generic plan at any table size.

Under the generic plan a bound `LIMIT $n` is costed as a tenth of the table, so past a few thousand
rows PostgreSQL sequential-scans and sorts instead of taking the index (and returns exact
neighbours where the custom plan returns approximate ones). A constant window depth fixes both;
these tests hold the templates to it and show the planner's choice on a table big enough to matter.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector

from pipelines.read.cacheability import generic_plan, plan_nodes, planned_rows, unprompted_hnsw_misses
from pipelines.read.compiler import compile_find
from pipelines.lanes_config import ANN_WINDOW
from pipelines.read.templates import TemplateError, check_binds_only, load_template
from pipelines.resources.database import connect

# Above cacheability.UNPROMPTED_HNSW_ROWS, so the check requires the index unprompted.
BIG_TABLE_ROWS = 6_000
# At chunk widths a bound window's index scan (a tenth of the table) and a sequential scan and sort
# cost within a few percent of each other; the sort won on MuSiQue (7k chunks) and on the 10k and
# 100k bench corpora, and dearer random reads tip it the same way here. The constant window is
# several times cheaper through the index either way.
DEARER_RANDOM_READS = "SET LOCAL random_page_cost = 8"
BOUND_WINDOW = """
SELECT chunk.id, chunk.embedding <=> :query_vector AS distance
FROM chunk
ORDER BY chunk.embedding <=> :query_vector
LIMIT :fusion_depth
"""


def test_a_bound_ann_window_is_refused_with_its_file_and_line(tmp_path: Path):
    template = tmp_path / "dense.sql"
    template.write_text(BOUND_WINDOW)
    with pytest.raises(TemplateError, match=rf"lane sources: .*dense\.sql:4: an ANN window takes `LIMIT {ANN_WINDOW}"):
        check_binds_only(load_template(template, "sources"))


def test_an_ann_window_of_another_constant_depth_is_refused(tmp_path: Path):
    template = tmp_path / "dense.sql"
    template.write_text(BOUND_WINDOW.replace("LIMIT :fusion_depth", "LIMIT 40  -- @constant: too shallow"))
    with pytest.raises(TemplateError, match=r"\(got 40\)"):
        check_binds_only(load_template(template, "sources"))


def test_distance_ranking_over_a_cte_is_not_an_ann_window(tmp_path: Path):
    template = tmp_path / "overview.sql"
    template.write_text(
        "WITH root AS MATERIALIZED (SELECT raptor_node.id, raptor_node.embedding FROM raptor_node)\n"
        "SELECT root.id FROM root ORDER BY root.embedding <=> :query_vector LIMIT :lane_limit\n"
    )
    check_binds_only(load_template(template, "overview"))


def test_every_dense_window_of_the_find_statement_has_the_constant_depth(config):
    statement = compile_find(config)
    assert statement.sql.count(f"LIMIT {ANN_WINDOW}") == len(statement.dense_tables)


def plant_big_chunk_table(connection: psycopg.Connection, rows: int) -> None:
    """`rows` chunks with random vectors, the HNSW index rebuilt over them, ANALYZEd. (`g > 0` ties
    each vector to its row; otherwise PostgreSQL computes one vector for all of them.)"""
    dimension = connection.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunk'::regclass AND attname = 'embedding'"
    ).fetchone()[0]
    index = connection.execute("SELECT pg_get_indexdef('chunk_embedding_hnsw'::regclass)").fetchone()[0]
    connection.execute("DROP INDEX chunk_embedding_hnsw")
    connection.execute("INSERT INTO document (id, title, body, content_hash) VALUES ('big', 'Big', 'big', 'big')")
    connection.execute(
        "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, embedding)"
        " SELECT 'big#' || g, 'big', g, 'filler text of a big corpus', 6, 'big#' || g,"
        "  (SELECT array_agg(random() - 0.5) FROM generate_series(1, %s) AS d WHERE g > 0)::vector"
        " FROM generate_series(1, %s) AS g",
        (dimension, rows),
    )
    connection.execute(index)
    connection.execute("ANALYZE chunk")


@pytest.fixture(scope="module")
def big_chunks(make_database):  # type: ignore[no-untyped-def]
    database = make_database()
    with database.connection() as connection:
        plant_big_chunk_table(connection, BIG_TABLE_ROWS)
    return database


def indexes_used(plan: dict) -> set[str]:
    return {node["Index Name"] for node in plan_nodes(plan["Plan"]) if node.get("Index Name")}


def test_a_big_chunk_table_keeps_its_hnsw_index_in_the_unprompted_generic_plan(big_chunks, config):
    statement = compile_find(config)
    bound = BOUND_WINDOW.replace(":query_vector", "$1::vector").replace(":fusion_depth", "$2::int8")
    with connect(big_chunks.url, autocommit=True) as connection, connection.transaction():
        register_vector(connection)
        connection.execute(DEARER_RANDOM_READS)
        rows = planned_rows(connection, statement.dense_tables)
        plan = generic_plan(connection, statement, unprompted=True)
        # The same window with a bound depth, as the templates had it.
        bound_plan = connection.execute(f"EXPLAIN (GENERIC_PLAN, FORMAT JSON) {bound}").fetchone()[0][0]
    assert rows["chunk"] >= BIG_TABLE_ROWS
    assert unprompted_hnsw_misses(plan, statement, rows) == []
    assert "chunk_embedding_hnsw" in indexes_used(plan)
    assert "chunk_embedding_hnsw" not in indexes_used(bound_plan)
    assert unprompted_hnsw_misses(bound_plan, statement, rows) == [f"chunk ({rows['chunk']:.0f} rows)"]
