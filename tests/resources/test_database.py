"""The schema, migrations and database resource, against the real server."""

from __future__ import annotations

import psycopg
import pytest

from pipelines.resources.database import Database, connect, prepare_database, server_on_this_machine
from pipelines.errors import DatabaseError
from pipelines.resources.migrations import change_embedding_dimension, discover_migrations, vector_columns

TABLES = {
    "document", "chunk", "entity", "fact", "community", "profile", "raptor_node", "session_item",
    "entity_kind", "bm25_posting", "bm25_term", "bm25_chunk_length", "bm25_corpus",
}
EMBEDDED_TABLES = {"chunk", "entity", "fact", "community", "profile", "raptor_node", "session_item", "entity_kind"}


def catalog(connection: psycopg.Connection) -> dict[str, set[str]]:
    schema = "current_schema()"
    return {
        "tables": {r for (r,) in connection.execute(f"SELECT tablename FROM pg_tables WHERE schemaname = {schema}")},
        "views": {r for (r,) in connection.execute(f"SELECT viewname FROM pg_views WHERE schemaname = {schema}")},
        "indexes": {
            r for (r,) in connection.execute(f"SELECT indexdef FROM pg_indexes WHERE schemaname = {schema}")
        },
    }


def test_every_table_view_and_index_exists(database: Database) -> None:
    with database.connection() as connection:
        found = catalog(connection)
    assert found["tables"] >= TABLES
    assert "live_fact" in found["views"]
    hnsw_tables = {
        definition.split(" ON ")[1].split()[0].split(".")[-1]
        for definition in found["indexes"]
        if "USING hnsw (embedding vector_cosine_ops)" in definition
    }
    assert hnsw_tables == EMBEDDED_TABLES
    assert any("fact USING btree (subject_id)" in d for d in found["indexes"])
    assert any("fact USING btree (object_id)" in d for d in found["indexes"])
    assert any("gin (lower(name) gin_trgm_ops)" in d for d in found["indexes"])


def test_every_table_carries_scopes(database: Database) -> None:
    with database.connection() as connection:
        rows = connection.execute(
            "SELECT table_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND column_name = 'scopes'"
        ).fetchall()
    assert {table for (table,) in rows} >= TABLES


def test_vector_width_follows_configuration(database: Database, embedding_dimension: int) -> None:
    with database.connection() as connection:
        widths = connection.execute(
            "SELECT DISTINCT atttypmod FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND a.atttypid = 'vector'::regtype AND c.relkind = 'r'"
        ).fetchall()
    assert widths == [(embedding_dimension,)]


def test_migrations_applied_twice_change_nothing(database: Database, embedding_dimension: int) -> None:
    with database.connection() as connection:
        before = catalog(connection)
    assert prepare_database(database.url, embedding_dimension) == []
    with database.connection() as connection:
        assert catalog(connection) == before
        recorded = connection.execute("SELECT count(*) FROM lanegraph_migration").fetchone()[0]
    assert recorded == len(discover_migrations())


def vector_storage(connection: psycopg.Connection) -> set[str]:
    return {
        storage for (storage,) in connection.execute(
            "SELECT DISTINCT a.attstorage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND a.atttypid = 'vector'::regtype AND c.relkind = 'r'"
        )
    }


def test_a_chunk_keeps_its_embedding_in_its_row(database: Database, embedding_dimension: int) -> None:
    """A chunk's text and vector pass TOAST's threshold together: the text leaves the row, the
    vector every distance reads stays."""
    with database.connection() as connection:
        assert vector_storage(connection) == {"m"}
        connection.execute(
            "INSERT INTO document (id, title, uri, body, content_hash) VALUES ('d', 'D', 'u', '', 'h')"
        )
        connection.execute(
            "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, embedding)"
            " VALUES ('c', 'd', 0, %s, 600, 'h', array_fill(0.5, ARRAY[%s])::vector)",
            (" ".join(f"w{i}" for i in range(600)), embedding_dimension),
        )
        toasted = connection.execute(
            "SELECT pg_column_toast_chunk_id(embedding) IS NOT NULL, pg_column_toast_chunk_id(text) IS NOT NULL"
            " FROM chunk WHERE id = 'c'"
        ).fetchone()
    assert toasted == (False, True)


def test_live_fact_hides_closed_and_future_claims(database: Database) -> None:
    with database.connection() as connection:
        connection.execute("INSERT INTO entity_kind (name) VALUES ('project')")
        connection.execute(
            "INSERT INTO entity (id, name, kind, normalized_name) VALUES ('project:atlas', 'Atlas', 'project', 'atlas')"
        )
        connection.execute(
            """
            INSERT INTO fact (id, subject_id, predicate, object_value, statement, valid_from, recorded_to)
            VALUES ('now', 'project:atlas', 'status', 'active', 'Atlas is active.', NULL, NULL),
                   ('closed', 'project:atlas', 'status', 'waiting', 'Atlas waits.', NULL, now()),
                   ('future', 'project:atlas', 'status', 'done', 'Atlas is done.', now() + interval '1 day', NULL)
            """
        )
        live = {r for (r,) in connection.execute("SELECT id FROM live_fact")}
    assert live == {"now"}


def test_width_mismatch_names_the_migration_command(database: Database, embedding_dimension: int) -> None:
    with pytest.raises(DatabaseError, match=r"lanegraph db migrate --embedding-dimension 768"):
        prepare_database(database.url, 768)


def test_changing_the_width_is_a_migration(make_schema_url, embedding_dimension: int) -> None:
    url = make_schema_url()
    with connect(url, autocommit=True) as connection:
        changed = change_embedding_dimension(connection, 8)
        assert changed == len(EMBEDDED_TABLES)
        assert {table for table, _ in vector_columns(connection)} == EMBEDDED_TABLES
        assert vector_storage(connection) == {"m"}
    assert prepare_database(url, 8) == []
    with pytest.raises(DatabaseError, match="vector\\(8\\)"):
        prepare_database(url, embedding_dimension)


def test_pool_registers_pgvector(database: Database) -> None:
    with database.connection() as connection:
        value = connection.execute("SELECT '[1,2,3]'::vector").fetchone()[0]
    assert value.to_list() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "url, message",
    [
        ("postgresql://nobody@127.0.0.1:1/none", "cannot connect to PostgreSQL at 127.0.0.1:1/none"),
        ("not a url at all", "not a valid PostgreSQL connection string"),
    ],
)
def test_bad_url_is_one_line(url: str, message: str) -> None:
    with pytest.raises(DatabaseError, match=message) as raised:
        connect(url)
    assert "\n" not in str(raised.value)


def test_an_applied_migration_that_was_edited_is_refused(make_schema_url, embedding_dimension: int) -> None:
    url = make_schema_url()
    with connect(url, autocommit=True) as connection:
        # As if 0004_graph.sql had been edited after it was applied here.
        connection.execute("UPDATE lanegraph_migration SET statement_checksum = 'before-the-edit' WHERE version = 4")
    with pytest.raises(DatabaseError, match=r"^0004_graph\.sql was changed after it was applied .* new migration file"):
        prepare_database(url, embedding_dimension)


def test_a_migration_recorded_without_a_statement_checksum_gets_one(make_schema_url, embedding_dimension: int) -> None:
    url = make_schema_url()
    with connect(url, autocommit=True) as connection:
        connection.execute("UPDATE lanegraph_migration SET statement_checksum = NULL")
    assert prepare_database(url, embedding_dimension) == []
    with connect(url, autocommit=True) as connection:
        assert connection.execute("SELECT count(*) FROM lanegraph_migration WHERE statement_checksum IS NULL").fetchone() == (0,)


def test_a_comment_edit_keeps_the_statement_checksum(tmp_path) -> None:
    [original] = [m for m in discover_migrations() if m.version == 4]
    edited = tmp_path / original.path.name
    edited.write_text("-- a reworded comment\n" + original.path.read_text().replace("\n", "\n  "))
    [copy] = discover_migrations(tmp_path)
    assert copy.statement_checksum == original.statement_checksum
    edited.write_text(original.path.read_text().replace("CREATE TABLE", "CREATE UNLOGGED TABLE", 1))
    assert discover_migrations(tmp_path)[0].statement_checksum != original.statement_checksum


@pytest.mark.parametrize(
    ("url", "here"),
    [
        ("host=/tmp/lanegraph/postgres dbname=lanegraph user=postgres", True),
        ("postgresql:///lanegraph", True),
        ("postgresql://postgres@localhost:5433/lanegraph", True),
        ("postgresql://postgres@127.0.0.1/lanegraph", True),
        ("postgresql://postgres@db.internal/lanegraph", False),
        ("host=localhost,db.internal dbname=lanegraph", False),
    ],
)
def test_a_server_reached_by_a_socket_or_loopback_runs_on_this_machine(url: str, here: bool) -> None:
    assert server_on_this_machine(url) is here
