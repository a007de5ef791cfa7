"""Running a compiled statement: positional parameters, a server-side prepared statement.

psycopg's RawCursor sends `$n` placeholders as they are (no client-side rewriting, so a `%` in the
SQL is just a `%`), and `prepare=True` prepares the statement on the server the first time a
connection runs it, then reuses it for every later question on that connection.
"""

from __future__ import annotations

from collections.abc import Mapping

import psycopg

from pipelines.read.compiler import CompiledStatement


def run_statement(
    connection: psycopg.Connection, statement: CompiledStatement, values: Mapping[str, object]
) -> list[tuple]:
    with psycopg.RawCursor(connection) as cursor:
        cursor.execute(statement.sql, statement.parameters(values), prepare=True)
        return cursor.fetchall()


def explain_statement(
    connection: psycopg.Connection,
    statement: CompiledStatement,
    values: Mapping[str, object] | None = None,
    *,
    analyze: bool = False,
) -> dict:
    """The JSON plan: `EXPLAIN (GENERIC_PLAN)` without values, `EXPLAIN (ANALYZE)` with them."""
    if values is None:
        options = "GENERIC_PLAN, FORMAT JSON"
        parameters = None
    else:
        options = "ANALYZE, BUFFERS, FORMAT JSON" if analyze else "FORMAT JSON"
        parameters = statement.parameters(values)
    with psycopg.RawCursor(connection) as cursor:
        cursor.execute(f"EXPLAIN ({options}) {statement.sql}", parameters)
        (plan,) = cursor.fetchone()
    return plan[0]
