"""A query that always answers and does not is refused naming what was read."""

from __future__ import annotations

import psycopg
import pytest

from pipelines.errors import DatabaseError
from pipelines.resources.rows import named_row, one_row


def test_one_row_and_named_row_return_the_row(server_url: str) -> None:
    with psycopg.connect(server_url) as connection:
        assert one_row(connection.execute("SELECT 1, 'a'"), "a constant") == (1, "a")
        assert named_row(connection.execute("SELECT 1 AS one, 'a' AS letter"), "a constant") == {"one": 1, "letter": "a"}


def test_a_missing_row_names_what_was_read(server_url: str) -> None:
    with psycopg.connect(server_url) as connection:
        with pytest.raises(DatabaseError, match="reading the chunk count: the database returned no row"):
            one_row(connection.execute("SELECT 1 WHERE false"), "the chunk count")
