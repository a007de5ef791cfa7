"""The Citus layout docs/operations.md describes holds on the migrated schema, but for its listed exceptions."""

from __future__ import annotations

from pipelines.resources.citus_layout import DISTRIBUTED, KNOWN_EXCEPTIONS, REFERENCE, layout_violations
from pipelines.resources.database import Database


def test_the_schema_follows_the_citus_layout_except_where_listed(database: Database) -> None:
    with database.connection() as connection:
        violations = layout_violations(connection)
    assert violations - KNOWN_EXCEPTIONS == set(), "new breaks of the Citus layout (fix, or list and explain them)"
    assert KNOWN_EXCEPTIONS - violations == set(), "fixed exceptions: remove them from KNOWN_EXCEPTIONS and docs/operations.md"


def test_the_layout_sees_a_break_it_does_not_list(database: Database) -> None:
    with database.connection() as connection:
        connection.execute("CREATE TABLE chunk_note (chunk_id text REFERENCES chunk (id), document_id text)")
        connection.execute("ALTER TABLE bm25_posting ADD COLUMN document_id text")
        violations = layout_violations(connection)
    assert "chunk_note: neither distributed nor a reference table" in violations
    assert "bm25_posting: document_id may be NULL" in violations
    assert "bm25_posting: no document_id column" not in violations


def test_every_table_is_placed_once() -> None:
    assert not DISTRIBUTED.keys() & REFERENCE
