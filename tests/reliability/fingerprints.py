"""What a database holds, reduced to comparable values: row counts, and per-table content hashes.

A fingerprint is the md5 of a table's rows in a fixed order, with every column whose value depends
on when a run happened (timestamps, write epochs) left out, so two runs that wrote the same data
compare equal however far apart they ran.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

# Columns that record when something happened rather than what was written.
TIME_TYPES = ("timestamp with time zone", "timestamp without time zone", "date")
# The graph write epoch that last changed an entity (migration 0114): which of two runs wrote first.
WRITE_ORDER_COLUMNS = frozenset({"changed_epoch"})


def user_tables(connection: psycopg.Connection) -> list[str]:
    return [
        name
        for (name,) in connection.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
            "AND c.relkind IN ('r', 'p') AND c.relname NOT LIKE 'lanegraph\\_%' ORDER BY 1"
        )
    ]


def table_counts(connection: psycopg.Connection) -> dict[str, int]:
    return {
        table: connection.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
        for table in user_tables(connection)
    }


def _content_columns(connection: psycopg.Connection, table: str, ignore: frozenset[str]) -> list[str]:
    return [
        name
        for name, data_type in connection.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,),
        )
        if data_type not in TIME_TYPES and name not in WRITE_ORDER_COLUMNS and name not in ignore
    ]


def table_fingerprints(
    connection: psycopg.Connection, ignore: frozenset[str] = frozenset()
) -> dict[str, tuple[int, str]]:
    """(row count, md5 of the ordered rows) per table, timestamps and `ignore`d columns left out."""
    fingerprints = {}
    for table in user_tables(connection):
        columns = [sql.Identifier(c) for c in _content_columns(connection, table, ignore)]
        row = sql.SQL("ROW({})::text").format(sql.SQL(", ").join(columns))
        count, digest = connection.execute(
            sql.SQL("SELECT count(*), md5(coalesce(string_agg(r, E'\\n' ORDER BY r), '')) FROM (SELECT {} AS r FROM {}) AS t").format(
                row, sql.Identifier(table)
            )
        ).fetchone()
        fingerprints[table] = (count, digest)
    return fingerprints
