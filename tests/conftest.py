"""Test fixtures: a real PostgreSQL for every test that needs one, never a mock.

Without DATABASE_URL the suite starts its own embedded server in a temporary data directory (so a
developer's demo database is never touched) and stops it at the end. With DATABASE_URL it runs
against that server. Either way each fixture gets its own freshly migrated schema, so tests never
see each other's rows; on DATABASE_URL's server the schemas are dropped at the end of the session,
on the embedded one they go with its data directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pipelines.config import LanegraphConfig, load_config
from tests import REPOSITORY
from tests.plans import every_lane_on
from pipelines.resources.database import Database, connect, prepare_database, resolve_database_url
from pipelines.resources.embedded_postgres import EmbeddedPostgres

TEST_DATABASE = "lanegraph_test"
MakeDatabase = Callable[[], Database]


@pytest.fixture(scope="session", autouse=True)
def isolated_data_dir() -> Iterator[Path]:
    """A private LANEGRAPH_DATA_DIR (embedded server, Dagster home) for the whole session.

    Not pytest's tmp_path: pytest prunes older sessions' folders, which would pull the data
    directory from under a server that a concurrent session still runs.
    """
    previous = os.environ.get("LANEGRAPH_DATA_DIR")
    data_dir = Path(tempfile.mkdtemp(prefix="lanegraph-test-"))
    os.environ["LANEGRAPH_DATA_DIR"] = str(data_dir)
    os.environ["DAGSTER_HOME"] = str(data_dir / "dagster")
    yield data_dir
    if not os.environ.get("DATABASE_URL"):
        EmbeddedPostgres(data_dir).stop(discard=True)
    shutil.rmtree(data_dir, ignore_errors=True)
    if previous is None:
        os.environ.pop("LANEGRAPH_DATA_DIR", None)
    else:
        os.environ["LANEGRAPH_DATA_DIR"] = previous


@pytest.fixture(scope="session")
def server_url(isolated_data_dir: Path) -> str:
    """The test database: DATABASE_URL, or `lanegraph_test` on the session's embedded server."""
    return resolve_database_url(TEST_DATABASE)


@pytest.fixture()
def own_server(tmp_path: Path) -> Iterator[EmbeddedPostgres]:
    """An embedded server of the test's own, so stopping or killing it disturbs no other test."""
    if os.environ.get("DATABASE_URL"):
        pytest.skip("stops an embedded server; DATABASE_URL points elsewhere")
    server = EmbeddedPostgres(tmp_path / "own-server")
    server.start()
    yield server
    # A test may leave it stopped or killed.
    if server.status().running:
        server.stop()


@pytest.fixture(scope="session")
def config() -> LanegraphConfig:
    """The shipped lanes.yaml with every lane and part a plan can turn on, so a test reaches them all
    (a test needing another plan defines its own `config`)."""
    return every_lane_on(load_config(REPOSITORY / "lanes.yaml"))


@pytest.fixture(scope="session")
def embedding_dimension() -> int:
    return load_config(REPOSITORY / "lanes.yaml").pipeline.embedding.dimension


def schema_url(url: str, schema: str) -> str:
    """`url` with a search path that puts `schema` first and keeps the extensions in public visible."""
    return psycopg.conninfo.make_conninfo(url, options=f"-c search_path={schema},public")


@pytest.fixture(scope="session")
def make_schema_url(server_url: str, embedding_dimension: int) -> Iterator[Callable[[], str]]:
    """Factory: a new, migrated schema on the test server; returns a URL whose search path selects it."""
    created: list[str] = []

    def make() -> str:
        schema = f"lanegraph_test_{uuid.uuid4().hex[:10]}"
        with connect(server_url, autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        created.append(schema)
        url = schema_url(server_url, schema)
        prepare_database(url, embedding_dimension)
        return url

    yield make
    if not os.environ.get("DATABASE_URL"):
        # The embedded server and its data directory go with the session (isolated_data_dir):
        # dropping hundreds of schemas first took a minute of the suite on a busy machine.
        return
    with connect(server_url, autocommit=True) as connection:
        for schema in created:
            # Roles outlive schemas: each schema's confined logins go with it, or a DATABASE_URL
            # server would keep two roles per test.
            logins = connection.execute(
                sql.SQL("SELECT login FROM {}.lanegraph_confined_login").format(sql.Identifier(schema))
            ).fetchall() if connection.execute(
                "SELECT to_regclass(format('%%I.lanegraph_confined_login', %s::text))", (schema,)
            ).fetchone()[0] else []
            connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
            for (login,) in logins:
                connection.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))


@pytest.fixture(scope="session")
def make_database(make_schema_url: Callable[[], str]) -> Iterator[MakeDatabase]:
    """Factory: a pooled `Database` on a new migrated schema; closed at the end of the session."""
    opened: list[Database] = []

    def make() -> Database:
        database = Database(make_schema_url())
        opened.append(database)
        return database

    yield make
    for database in opened:
        database.close()


@pytest.fixture()
def database(make_schema_url: Callable[[], str]) -> Iterator[Database]:
    """A fresh, empty, migrated database schema for one test; its pool closes with the test, so a
    whole suite's tests do not hold one connection each until the end (max_connections is 100)."""
    database = Database(make_schema_url())
    yield database
    database.close()
