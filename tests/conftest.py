"""Test fixtures: a real PostgreSQL for every test that needs one, never a mock.

Without DATABASE_URL each worker process of the suite (pytest-xdist) starts its own embedded server
in a temporary data directory (so a developer's demo database is never touched) and stops it at the
end. With DATABASE_URL it runs against that server. Either way each fixture gets a migrated schema
of its own (`ScratchSchemas`), so tests never see each other's rows. The `database` fixture's is
dropped when its test ends; the others at the end of the session, or with the embedded server's
data directory.
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
TEMPLATE_DATABASE = "lanegraph_test_template"
# The schema migrated in the template, and so in each of its copies.
COPIED_SCHEMA = "lanegraph_test"
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


class ScratchSchemas:
    """Migrated schemas for tests, one each, so that no test sees another's rows.

    On the session's embedded server each is a database copied from a template migrated once: the
    copy takes about a tenth of the time the migrations take, which every test with a database would
    otherwise pay. On DATABASE_URL's server, whose role need not be allowed to create databases,
    each is a schema of the test database, migrated afresh. Either way it holds the tables in a
    schema of its own, named in the URL's search path.
    """

    def __init__(self, server_url: str, embedding_dimension: int, *, copies: bool) -> None:
        self.server_url = server_url
        self.embedding_dimension = embedding_dimension
        self.copies = copies
        # URL -> the database (copies) or schema it selects.
        self.made: dict[str, str] = {}
        if copies:
            with connect(server_url, autocommit=True) as connection:
                connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DATABASE)))
            template_url = psycopg.conninfo.make_conninfo(server_url, dbname=TEMPLATE_DATABASE)
            with connect(template_url, autocommit=True) as connection:
                connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(COPIED_SCHEMA)))
            # It closes its connections: a database being copied may have none.
            prepare_database(schema_url(template_url, COPIED_SCHEMA), embedding_dimension)

    def make(self) -> str:
        """A new one; returns a URL whose search path selects it."""
        name = f"lanegraph_test_{uuid.uuid4().hex[:10]}"
        with connect(self.server_url, autocommit=True) as connection:
            if self.copies:
                connection.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(TEMPLATE_DATABASE))
                )
                url = schema_url(psycopg.conninfo.make_conninfo(self.server_url, dbname=name), COPIED_SCHEMA)
            else:
                connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
                url = schema_url(self.server_url, name)
                prepare_database(url, self.embedding_dimension)
        self.made[url] = name
        return url

    def discard(self, url: str) -> None:
        """Drop the one `url` selects, once its test is done with it (a copy holds 11 MB of disk)."""
        name = self.made.pop(url)
        with connect(self.server_url, autocommit=True) as connection:
            if self.copies:
                connection.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
                return
            # Roles outlive schemas: each schema's confined logins go with it, or a DATABASE_URL
            # server would keep two roles per test.
            logins = connection.execute(
                sql.SQL("SELECT login FROM {}.lanegraph_confined_login").format(sql.Identifier(name))
            ).fetchall() if connection.execute(
                "SELECT to_regclass(format('%%I.lanegraph_confined_login', %s::text))", (name,)
            ).fetchone()[0] else []
            connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
            for (login,) in logins:
                connection.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))


@pytest.fixture(scope="session")
def scratch_schemas(server_url: str, embedding_dimension: int) -> Iterator[ScratchSchemas]:
    external = bool(os.environ.get("DATABASE_URL"))
    schemas = ScratchSchemas(server_url, embedding_dimension, copies=not external)
    yield schemas
    # The embedded server's copies go with its data directory.
    if external:
        for url in list(schemas.made):
            schemas.discard(url)


@pytest.fixture(scope="session")
def make_schema_url(scratch_schemas: ScratchSchemas) -> Callable[[], str]:
    """Factory: a new, migrated schema on the test server; returns a URL whose search path selects it."""
    return scratch_schemas.make


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
def database(scratch_schemas: ScratchSchemas) -> Iterator[Database]:
    """A fresh, empty, migrated database schema for one test; its pool closes and the schema is
    dropped with the test, so a whole suite's tests hold neither a connection each until the end
    (max_connections is 100) nor the disk of every schema they made."""
    url = scratch_schemas.make()
    database = Database(url)
    yield database
    database.close()
    scratch_schemas.discard(url)
