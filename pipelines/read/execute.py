"""Running a compiled statement: positional parameters, a server-side prepared statement.

psycopg's RawCursor sends `$n` placeholders as they are (no client-side rewriting, so a `%` in the
SQL is just a `%`), and `prepare=True` prepares the statement on the server the first time a
connection runs it, then reuses it for every later question on that connection.
"""

from __future__ import annotations

from collections.abc import Mapping

import psycopg
from psycopg import sql

from pipelines.read.compiler import CompiledStatement
from pipelines.resources.rows import one_row

EXPLAINED = "lanegraph_explained"


def run_statement(
    connection: psycopg.Connection, statement: CompiledStatement, values: Mapping[str, object]
) -> list[tuple]:
    with psycopg.RawCursor(connection) as cursor:
        cursor.execute(statement.sql, statement.parameters(values), prepare=True)
        return cursor.fetchall()


def explain_statement(connection: psycopg.Connection, statement: CompiledStatement) -> dict:
    """The JSON generic plan, `EXPLAIN (GENERIC_PLAN)`: the plan without values."""
    with psycopg.RawCursor(connection) as cursor:
        cursor.execute(f"EXPLAIN (GENERIC_PLAN, FORMAT JSON) {statement.sql}")
        (plan,) = one_row(cursor, "the find statement's generic plan")
    return plan[0]


def explain_as_prepared(
    connection: psycopg.Connection, statement: CompiledStatement, values: Mapping[str, object]
) -> dict:
    """EXPLAIN ANALYZE of the statement run as find runs it: prepared on the server, then executed
    with the values, so the plan cache mode in force picks the plan (an EXPLAIN of the statement
    text with values plans for those values, a custom plan find never runs)."""
    # EXPLAIN EXECUTE cannot take bound parameters (the server analyses its arguments after fixing
    # the outer statement's parameters), so the values travel as typed literals, quoted by psycopg.
    arguments = sql.SQL(", ").join(
        sql.SQL("{}::{}").format(sql.Literal(value), sql.SQL(bind.sql_type))
        for bind, value in zip(statement.binds, statement.parameters(values), strict=True)
    )
    types = ", ".join(bind.sql_type for bind in statement.binds)
    with psycopg.RawCursor(connection) as cursor:
        cursor.execute(f"PREPARE {EXPLAINED} ({types}) AS {statement.sql}")
        try:
            explain = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE {}({})").format(
                sql.Identifier(EXPLAINED), arguments
            )
            cursor.execute(explain.as_string(connection))
            (plan,) = one_row(cursor, "the find statement's plan")
        finally:
            cursor.execute(f"DEALLOCATE {EXPLAINED}")
    return plan[0]
