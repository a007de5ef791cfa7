"""The database every asset and lane uses: embedded PostgreSQL by default, DATABASE_URL otherwise.

`open_database()` resolves the URL, checks the server (PostgreSQL 16+, pgvector, pg_trgm), applies
migrations for the configured vector width and returns a pooled `Database`. Dagster assets reach it
through `DatabaseResource`; the CLI and tests call `open_database()` directly.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import psycopg
from pgvector.psycopg import register_vector
from psycopg.adapt import AdaptersMap
from psycopg_pool import ConnectionPool, PoolTimeout
from pydantic import PrivateAttr

from pipelines.config import data_dir, default_config_path, load_config
from pipelines.resources.embedded_postgres import EmbeddedPostgres
from pipelines.errors import DatabaseError
from pipelines.resources.migrations import apply_migrations, check_standby_schema
from pipelines.resources.scopes import (
    CONFINED_LOGINS,
    PUBLISH_SCOPES,
    SIGN_SCOPES,
    ConfinedLogin,
    ScopedRole,
    normalize_scopes,
)

DEFAULT_DATABASE = "lanegraph"
MINIMUM_SERVER_VERSION = 160000
CONNECT_TIMEOUT_SECONDS = 10


def resolve_database_url(database: str = DEFAULT_DATABASE) -> str:
    """DATABASE_URL when set; otherwise the embedded server (started on demand) and `database` on it."""
    external = os.environ.get("DATABASE_URL", "").strip()
    if external:
        return external
    return EmbeddedPostgres(data_dir()).database_url(database)


def _describe_connect_failure(url: str, error: Exception) -> str:
    try:
        target = psycopg.conninfo.conninfo_to_dict(url)
        where = f"{target.get('host') or 'localhost'}:{target.get('port') or 5432}/{target.get('dbname', '')}"
    except psycopg.ProgrammingError:
        return "DATABASE_URL is not a valid PostgreSQL connection string"
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    reason = lines[0] if lines else type(error).__name__
    return f"cannot connect to PostgreSQL at {where}: {reason}"


def connect(url: str, **kwargs: object) -> psycopg.Connection:
    """One connection, with every failure turned into a one-line DatabaseError."""
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_SECONDS, **kwargs)
    except psycopg.ProgrammingError as error:
        raise DatabaseError(_describe_connect_failure(url, error)) from None
    except psycopg.OperationalError as error:
        raise DatabaseError(_describe_connect_failure(url, error)) from None


def _check_server_version(connection: psycopg.Connection) -> None:
    version = connection.info.server_version
    if version < MINIMUM_SERVER_VERSION:
        raise DatabaseError(
            f"PostgreSQL {version // 10000} is too old; Lanegraph needs PostgreSQL 16 or newer"
        )


def _configure_connection(connection: psycopg.Connection) -> None:
    register_vector(connection)
    # register_vector ran a query: end that implicit transaction so the pool sees an idle connection.
    connection.commit()


class Database:
    """A pool of owner connections to one migrated database, and confined connections opened per block."""

    def __init__(self, url: str, *, max_size: int = 4) -> None:
        self.url = url
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            configure=_configure_connection,
            kwargs={"connect_timeout": CONNECT_TIMEOUT_SECONDS},
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS * 2)
        except PoolTimeout:
            self._pool.close()
            raise DatabaseError(_describe_connect_failure(url, TimeoutError("timed out"))) from None
        # Confined connections are not pooled (each belongs to one block), so this bounds how many
        # a process holds at once, as the pool's size bounds the owner's.
        self._confined_slots = threading.BoundedSemaphore(max_size)
        self._logins_lock = threading.Lock()
        self._logins: dict[ScopedRole, ConfinedLogin] = {}
        self._vector_adapters: AdaptersMap | None = None

    def _confined_login(self, role: ScopedRole) -> tuple[ConfinedLogin, AdaptersMap]:
        """The login for `role`, and an owner connection's adapters (pgvector's types registered),
        which a confined connection copies instead of looking the types up again."""
        with self._logins_lock:
            if self._vector_adapters is None:
                with self._pool.connection() as connection:
                    self._logins = {
                        ScopedRole(caller_role): ConfinedLogin(ScopedRole(caller_role), login, password, key)
                        for caller_role, login, password, key in connection.execute(CONFINED_LOGINS)
                    }
                    self._vector_adapters = connection.adapters
            return self._logins[role], self._vector_adapters

    @contextmanager
    def connection(
        self, scopes: Sequence[str] | None = None, *, role: ScopedRole = ScopedRole.READER
    ) -> Iterator[psycopg.Connection]:
        """An owner connection from the pool, or a confined one; its transaction commits on success
        and rolls back on error.

        Without `scopes` it acts as the owner and sees every row (the write side). With `scopes` the
        block gets a connection of its own, logged in as the schema's login for `role`, and runs as
        one transaction under row-level security: it sees only rows whose scopes are all among
        `scopes` (`[]` = public rows only), whatever SQL it runs. The connection closes when the block
        ends. `commit()` inside the block is refused, because committing would end the block's
        transaction half-way through.
        """
        if scopes is None:
            with self._pool.connection() as connection:
                yield connection
            return
        caller_scopes = list(normalize_scopes(scopes))
        login, adapters = self._confined_login(role)
        with self._confined_slots, connect(login.conninfo(self.url), autocommit=True, context=adapters) as connection:
            scopes_text, backend_identity = connection.execute(PUBLISH_SCOPES, (caller_scopes,)).fetchone()
            connection.execute(SIGN_SCOPES, (login.sign(backend_identity, scopes_text),))
            with connection.transaction():
                yield connection

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def prepare_database(url: str, embedding_dimension: int) -> list[str]:
    """Check the server and apply migrations; return the migrations applied now. A hot standby is
    only checked: it replays its primary's migrations."""
    with connect(url, autocommit=True) as connection:
        _check_server_version(connection)
        if connection.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
            check_standby_schema(connection, embedding_dimension)
            return []
        return apply_migrations(connection, embedding_dimension)


def open_database(
    config_path: Path | None = None, *, database: str = DEFAULT_DATABASE, url: str | None = None
) -> Database:
    """Resolve, check, migrate and open the database lanes.yaml describes."""
    config = load_config(config_path)
    url = url or resolve_database_url(database)
    prepare_database(url, config.pipeline.embedding.dimension)
    return Database(url)


class DatabaseResource(dg.ConfigurableResource):
    """The database for Dagster assets; `database_url` empty means DATABASE_URL or embedded."""

    database_url: str = ""
    config_path: str = ""

    _database: Database | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        config_path = Path(self.config_path) if self.config_path else default_config_path()
        self._database = open_database(config_path, url=self.database_url or None)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._database is not None:
            self._database.close()

    def get_database(self) -> Database:
        if self._database is None:
            raise DatabaseError("the database resource was used outside a Dagster run")
        return self._database

    @contextmanager
    def connection(
        self, scopes: Sequence[str] | None = None, *, role: ScopedRole = ScopedRole.READER
    ) -> Iterator[psycopg.Connection]:
        with self.get_database().connection(scopes, role=role) as connection:
            yield connection
