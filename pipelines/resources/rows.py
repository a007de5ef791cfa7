"""What a query that always answers returned: its one row, by position or by column name.

psycopg types `fetchone()` as possibly None and `description` as None before a query has run; an
aggregate, an `INSERT ... RETURNING` or a row just written always answer, so a missing row means
the database is not what Lanegraph wrote, and the error says which read found nothing instead of
failing on `None[0]`.
"""

from __future__ import annotations

from typing import Any, TypeVar

import psycopg

from pipelines.errors import DatabaseError

Row = TypeVar("Row")


def one_row(cursor: psycopg.Cursor[Row], what: str) -> Row:
    """The cursor's next row, which the query (reading `what`) always returns."""
    row = cursor.fetchone()
    if row is None:
        raise DatabaseError(f"reading {what}: the database returned no row where one is always expected")
    return row


def named_row(cursor: psycopg.Cursor[Any], what: str) -> dict[str, Any]:
    """The cursor's one row (see `one_row`) by column name."""
    row = one_row(cursor, what)
    if cursor.description is None:
        raise DatabaseError(f"reading {what}: the query returned no columns to name")
    return dict(zip([column.name for column in cursor.description], row, strict=True))
