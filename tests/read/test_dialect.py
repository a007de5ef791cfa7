"""The pgvector dialect reads and writes pgvector and pg_trgm operators verbatim, at PostgreSQL's
precedence, keeps bind styles and vector types, and leaves the rest of PostgreSQL as stock does."""

from __future__ import annotations

import math

import pytest
import sqlglot
from sqlglot import exp

from pipelines.read.dialect import (
    ColonPlaceholder,
    CosineDistance,
    HammingDistance,
    JaccardDistance,
    L1Distance,
    L2Distance,
    NegativeInnerProduct,
    PgVector,
    StrictWordSimilar,
    StrictWordSimilarCommuted,
    WordSimilar,
    WordSimilarCommuted,
    to_psycopg,
)
from pipelines.resources.database import Database

# operator, node, the SQL type its operands are cast to
VECTOR_OPERATORS = [
    ("<->", L2Distance, "VECTOR(384)"),
    ("<#>", NegativeInnerProduct, "VECTOR(384)"),
    ("<=>", CosineDistance, "VECTOR(384)"),
    ("<+>", L1Distance, "VECTOR(384)"),
    ("<~>", HammingDistance, "BIT(384)"),
    ("<%>", JaccardDistance, "BIT(384)"),
]
WORD_SIMILARITY_OPERATORS = [
    ("<%", WordSimilar),
    ("%>", WordSimilarCommuted),
    ("<<%", StrictWordSimilar),
    ("%>>", StrictWordSimilarCommuted),
]
STATEMENTS = [
    "SELECT e.id FROM embeddings AS e ORDER BY e.embedding {op} CAST(:q AS {type}) LIMIT :k",
    "SELECT e.id FROM embeddings AS e ORDER BY e.embedding {op} CAST(%(q)s AS {type}) LIMIT %(k)s",
    "SELECT e.id, e.embedding {op} CAST(:q AS {type}) AS distance FROM embeddings AS e",
    "SELECT e.id FROM embeddings AS e WHERE e.embedding {op} CAST(:q AS {type}) < :max_distance",
]


def round_trip(sql: str) -> str:
    return sqlglot.transpile(sql, read=PgVector, write=PgVector)[0]


def test_stock_postgres_turns_cosine_distance_into_null_safe_equality() -> None:
    """Why the dialect exists: stock sqlglot silently rewrites `<=>` into another meaning."""
    stock = sqlglot.transpile("SELECT a <=> b FROM t", read="postgres", write="postgres")[0]
    assert stock == "SELECT a IS NOT DISTINCT FROM b FROM t"
    assert round_trip("SELECT a <=> b FROM t") == "SELECT a <=> b FROM t"


@pytest.mark.parametrize("template", STATEMENTS)
@pytest.mark.parametrize(("op", "node", "sql_type"), VECTOR_OPERATORS)
def test_vector_operator_round_trips(template: str, op: str, node: type, sql_type: str) -> None:
    sql = template.format(op=op, type=sql_type)
    written = round_trip(sql)
    assert written == sql
    assert "IS NOT DISTINCT FROM" not in written


@pytest.mark.parametrize(("op", "node", "sql_type"), VECTOR_OPERATORS)
def test_vector_operator_parses_into_its_own_node(op: str, node: type, sql_type: str) -> None:
    assert isinstance(sqlglot.parse_one(f"SELECT a {op} b", read=PgVector).selects[0], node)


@pytest.mark.parametrize(("op", "node", "sql_type"), VECTOR_OPERATORS)
def test_vector_operator_binds_looser_than_plus_and_tighter_than_comparison(
    op: str, node: type, sql_type: str
) -> None:
    comparison = sqlglot.parse_one(f"SELECT a + b {op} c < 0.5", read=PgVector).selects[0]
    assert isinstance(comparison, exp.LT)
    assert isinstance(comparison.this, node)
    assert isinstance(comparison.this.this, exp.Add)


def test_operators_of_one_level_associate_left_as_in_postgres() -> None:
    chain = sqlglot.parse_one("SELECT a <=> b | c <#> d", read=PgVector).selects[0]
    assert isinstance(chain, NegativeInnerProduct)
    assert isinstance(chain.this, exp.BitwiseOr)
    assert isinstance(chain.this.this, CosineDistance)


@pytest.mark.parametrize(("op", "node"), WORD_SIMILARITY_OPERATORS)
def test_trigram_word_similarity_operator_round_trips_as_a_predicate(op: str, node: type) -> None:
    sql = f"SELECT e.name FROM entities AS e WHERE :mention {op} e.name AND e.live"
    assert round_trip(sql) == sql
    condition = sqlglot.parse_one(sql, read=PgVector).args["where"].this
    assert isinstance(condition, exp.And)
    assert isinstance(condition.this, node)
    assert isinstance(condition.this, exp.Predicate)


def test_trigram_similarity_percent_stays_the_percent_operator() -> None:
    sql = "SELECT SIMILARITY(e.name, :mention) FROM entities AS e WHERE e.name % :mention"
    assert round_trip(sql) == sql


def test_binds_keep_the_style_they_were_written_in() -> None:
    sql = "SELECT :colon, %(psycopg)s, $1"
    colon, psycopg, numbered = sqlglot.parse_one(sql, read=PgVector).selects
    assert isinstance(colon, ColonPlaceholder)
    assert type(psycopg) is exp.Placeholder
    assert isinstance(numbered, exp.Parameter)
    assert round_trip(sql) == sql


@pytest.mark.parametrize(
    "cast", ["CAST(:query_vector AS vector(384))", ":query_vector::vector(384)"]
)
def test_vector_cast_keeps_its_type_and_dimension(cast: str) -> None:
    written = round_trip(f"SELECT {cast}")
    assert written == "SELECT CAST(:query_vector AS VECTOR(384))"
    data_type = sqlglot.parse_one(written, read=PgVector).find(exp.DataType)
    assert data_type.this is exp.DType.VECTOR
    assert [param.name for param in data_type.expressions] == ["384"]


@pytest.mark.parametrize("pgvector_type", ["halfvec(384)", "sparsevec(30000)"])
def test_other_pgvector_types_are_kept_as_written(pgvector_type: str) -> None:
    assert round_trip(f"SELECT :q::{pgvector_type}") == f"SELECT CAST(:q AS {pgvector_type})"


@pytest.mark.parametrize(
    "sql",
    [
        "WITH dense AS MATERIALIZED (SELECT c.id, c.embedding <=> CAST(:q AS VECTOR(384)) AS d"
        " FROM chunks AS c ORDER BY d LIMIT :k)"
        " SELECT id FROM dense UNION ALL SELECT id FROM sparse",
        "SELECT ROW_NUMBER() OVER (PARTITION BY lane ORDER BY distance) AS rank FROM candidates",
        "SELECT s.id FROM seeds AS s CROSS JOIN LATERAL (SELECT c.id FROM chunks AS c"
        " ORDER BY c.embedding <-> s.embedding LIMIT :k) AS near",
        # sqlglot keeps EXPLAIN as a verbatim command, which is all the cacheability check needs.
        "EXPLAIN (GENERIC_PLAN) SELECT id FROM chunks ORDER BY embedding <=> $1 LIMIT $2",
    ],
)
def test_postgres_constructs_of_the_find_statement_round_trip(sql: str) -> None:
    assert round_trip(sql) == sql


def test_distances_are_typed_double_and_trigram_predicates_boolean() -> None:
    from sqlglot.optimizer.annotate_types import annotate_types

    select = sqlglot.parse_one("SELECT a <=> b, a <% b", read=PgVector)
    select = annotate_types(select, dialect=PgVector)
    assert [column.type.this for column in select.selects] == [exp.DType.DOUBLE, exp.DType.BOOLEAN]


def test_to_psycopg_writes_named_binds_and_doubles_every_other_percent() -> None:
    tree = sqlglot.parse_one(
        "SELECT b <%> CAST(:q AS BIT(8)), name LIKE 'a%' FROM t WHERE :m <% name LIMIT %(k)s",
        read=PgVector,
    )
    assert to_psycopg(tree) == (
        "SELECT b <%%> CAST(%(q)s AS BIT(8)), name LIKE 'a%%' FROM t"
        " WHERE %(m)s <%% name LIMIT %(k)s"
    )


def test_to_psycopg_writes_unnamed_binds_as_percent_s() -> None:
    assert to_psycopg(sqlglot.parse_one("SELECT 1 % 2 LIMIT %s", read=PgVector)) == (
        "SELECT 1 %% 2 LIMIT %s"
    )


def test_written_operators_compute_the_pgvector_distances(database: Database) -> None:
    vectors = "CAST(:u AS VECTOR(3)) {op} CAST(:v AS VECTOR(3))"
    bits = "CAST(:x AS BIT(4)) {op} CAST(:y AS BIT(4))"
    distances = [vectors.format(op=op) for op in ("<->", "<#>", "<=>", "<+>")]
    distances += [bits.format(op=op) for op in ("<~>", "<%>")]
    tree = sqlglot.parse_one(f"SELECT {', '.join(distances)}", read=PgVector)
    binds = {"u": "[1,2,3]", "v": "[1,1,1]", "x": "1010", "y": "0110"}
    with database.connection() as connection:
        row = connection.execute(to_psycopg(tree), binds).fetchone()
    cosine = 1 - 6 / (math.sqrt(14) * math.sqrt(3))
    assert row == pytest.approx((math.sqrt(5), -6.0, cosine, 3.0, 2.0, 1 - 1 / 3))
