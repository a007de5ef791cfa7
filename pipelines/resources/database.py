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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from pipelines.resources.rows import one_row
from pipelines.resources.scopes import (
    BLOCK_SIGNING_INPUT,
    CONFINED_LOGIN_FOR,
    PUBLISH_SCOPES,
    SIGN_SCOPES,
    ConfinedLogin,
    ScopedRole,
    normalize_scopes,
)

DEFAULT_DATABASE = "lanegraph"
MINIMUM_SERVER_VERSION = 160000
CONNECT_TIMEOUT_SECONDS = 10
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}


def schema_advisory_lock(purpose: str, table: str) -> str:
    """The statement that takes a transaction-scoped advisory lock on `purpose` within the schema
    holding `table` (as the search path finds it). PostgreSQL keys advisory locks by database, so a
    constant key would make builds in different schemas of one database (evaluation builds on a
    DATABASE_URL server, one schema per project) wait for each other."""
    return (
        f"SELECT pg_advisory_xact_lock(hashtextextended('{purpose}', c.relnamespace::bigint)) "
        f"FROM pg_class c WHERE c.oid = '{table}'::regclass"
    )


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


def server_on_this_machine(url: str) -> bool:
    """Whether the server of `url` runs on this machine (reached by a Unix socket, as the embedded
    server is, or a loopback address): its work and this process's then share the same cores."""
    hosts = str(psycopg.conninfo.conninfo_to_dict(url).get("host") or "").split(",")
    return all(not host or host.startswith("/") or host in LOOPBACK_HOSTS for host in hosts)


def connect(url: str, **kwargs: Any) -> psycopg.Connection:
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


# A confined connection serves blocks of one caller role and one scope set.
ConfinedKey = tuple[ScopedRole, tuple[str, ...]]
# What returns a kept confined connection to its first state between blocks: what DISCARD ALL does
# (every setting, so the role is the login's starting role again and the scopes and their signature
# are gone; cursors; LISTEN; advisory locks; temporary tables; sequence state) except dropping the
# prepared statements and their plans. Those are find's own, made by psycopg at the protocol level,
# and making them again costs more than the statement takes to run; a block's own are caught by
# `PREPARED_STATEMENTS`.
RESET_CONFINED = (
    "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; UNLISTEN *; "
    "SELECT pg_advisory_unlock_all(); DISCARD TEMP; DISCARD SEQUENCES"
)
# The protocol-level prepared statements, and whether SQL (PREPARE) made any.
PREPARED_STATEMENTS = (
    "SELECT coalesce(array_agg(name::text) FILTER (WHERE NOT from_sql), '{}'), coalesce(bool_or(from_sql), false) "
    "FROM pg_prepared_statements"
)


@dataclass
class KeptConnection:
    connection: psycopg.Connection
    # The protocol-level prepared statements (psycopg's) it held when it was last reset.
    prepared: frozenset[str] = frozenset()


class ConfinedConnections:
    """Confined connections kept open between blocks, at most `capacity` open at once.

    Opening one costs a connect, an authentication, a backend whose caches start cold and preparing
    find again: more than the find statement takes. A kept connection only ever serves the caller
    role and scopes it was opened for, because a scope signature is bound to the backend: a
    signature seen in a backend that only ever held one scope set opens nothing beyond that set.
    Between blocks it is reset (`RESET_CONFINED`), so no block sees session state an earlier one
    left. It keeps its prepared statements only while they are psycopg's as psycopg knows them: a
    block that ran PREPARE (which could take the name of one of find's) or DEALLOCATE closes the
    connection instead. When all `capacity` are open, the least recently used idle one closes to
    make room for another key.
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._slots = threading.BoundedSemaphore(capacity)
        self._lock = threading.Lock()
        self._in_use = 0
        # Least recently returned first.
        self._idle: list[tuple[ConfinedKey, KeptConnection]] = []

    def checkout(self, key: ConfinedKey) -> KeptConnection | None:
        """Wait for a slot; then a kept connection of `key`, or None when the caller must open one
        (room for it is made). Every checkout is followed by one `checkin`."""
        self._slots.acquire()
        evicted: list[KeptConnection] = []
        with self._lock:
            self._in_use += 1
            for index in reversed(range(len(self._idle))):
                if self._idle[index][0] == key:
                    return self._idle.pop(index)[1]
            while self._idle and self._in_use + len(self._idle) > self._capacity:
                evicted.append(self._idle.pop(0)[1])
        for kept in evicted:
            kept.connection.close()
        return None

    def checkin(self, key: ConfinedKey, kept: KeptConnection | None) -> None:
        """Give back the slot, keeping the connection for `key` once it is reset; one that is broken,
        mid-transaction, fails the reset or whose prepared statements a block changed is closed."""
        try:
            if kept is not None and not kept.connection.closed:
                reset = _reset_confined(kept)
                if reset is None:
                    kept.connection.close()
                else:
                    with self._lock:
                        self._idle.append((key, reset))
        finally:
            with self._lock:
                self._in_use -= 1
            self._slots.release()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for _, kept in idle:
            kept.connection.close()


def _reset_confined(kept: KeptConnection) -> KeptConnection | None:
    """`kept` reset for another block, or None if it cannot be trusted to be."""
    connection = kept.connection
    if connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return None
    try:
        connection.execute(RESET_CONFINED)
        names, made_by_sql = one_row(connection.execute(PREPARED_STATEMENTS), "the prepared statements")
    except psycopg.Error:
        return None
    prepared = frozenset(names)
    # psycopg may also have dropped its own (after a ROLLBACK it deallocates them all); closing
    # then is merely cautious.
    if made_by_sql or not kept.prepared <= prepared:
        return None
    return KeptConnection(connection, prepared)


def _publish_scopes(connection: psycopg.Connection, login: ConfinedLogin, caller_scopes: Sequence[str]) -> None:
    """Publish `caller_scopes` in the session, signed for its backend."""
    scopes_text, backend_identity = one_row(
        connection.execute(PUBLISH_SCOPES, (list(caller_scopes),)), "the published scopes"
    )
    connection.execute(SIGN_SCOPES, (login.sign(backend_identity, scopes_text),))


class Database:
    """A pool of owner connections to one migrated database, and confined connections kept per
    caller role and scopes."""

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
        self._confined = ConfinedConnections(max_size)
        self._logins_lock = threading.Lock()
        self._logins: dict[ConfinedKey, ConfinedLogin] = {}
        self._vector_adapters: AdaptersMap | None = None

    def _confined_login(self, key: ConfinedKey, *, reset_password: bool = False) -> tuple[ConfinedLogin, AdaptersMap]:
        """The login for `key` as the owner left it (made on first use, settings the login gave
        itself reset), and an owner connection's adapters (pgvector's types registered), which a
        confined connection copies instead of looking the types up again."""
        role, caller_scopes = key
        try:
            # As long as a connection may take to open, not the pool's half minute: a confined
            # block opened while the server is down says so at once (a server answers 503).
            with self._pool.connection(timeout=CONNECT_TIMEOUT_SECONDS) as connection:
                row = connection.execute(CONFINED_LOGIN_FOR, (role.value, list(caller_scopes), reset_password)).fetchone()
                adapters = connection.adapters
        except PoolTimeout:
            raise DatabaseError(_describe_connect_failure(self.url, TimeoutError("timed out"))) from None
        if row is None:
            # A hot standby holds only the logins its primary made; reads fall back to the primary.
            raise DatabaseError(
                f"no {role.value} login for scopes {list(caller_scopes)} on this server yet: it is a standby, "
                "and the primary makes one at its first confined read"
            )
        login = ConfinedLogin(role, *row)
        with self._logins_lock:
            self._logins[key] = login
            if self._vector_adapters is None:
                self._vector_adapters = adapters
            return login, self._vector_adapters

    def _open_confined(self, key: ConfinedKey) -> tuple[KeptConnection, ConfinedLogin]:
        login, adapters = self._confined_login(key)
        try:
            connection = connect(login.conninfo(self.url), autocommit=True, context=adapters)
        except DatabaseError:
            # A block may have changed its own login's password: set it again, and try once more.
            login, adapters = self._confined_login(key, reset_password=True)
            connection = connect(login.conninfo(self.url), autocommit=True, context=adapters)
        return KeptConnection(connection), login

    def block_signature(self, connection: psycopg.Connection, purpose: str, values: Sequence[str]) -> str | None:
        """The application's signature over `values` for `purpose` in this confined block's backend,
        which SQL run in the block cannot make; None in an owner connection, which needs none."""
        backend_identity, login_name, values_text = one_row(
            connection.execute(BLOCK_SIGNING_INPUT, (list(values),)), "the block's signing input"
        )
        with self._logins_lock:
            login = next((login for login in self._logins.values() if login.login == login_name), None)
        return None if login is None else login.sign(backend_identity, f"{purpose}:{values_text}")

    @contextmanager
    def connection(
        self, scopes: Sequence[str] | None = None, *, role: ScopedRole = ScopedRole.READER
    ) -> Iterator[psycopg.Connection]:
        """An owner connection from the pool, or a confined one; its transaction commits on success
        and rolls back on error.

        Without `scopes` it acts as the owner and sees every row (the write side). With `scopes` the
        block gets a connection of its own, logged in as the schema's login for `role` and `scopes`, and runs as
        one transaction under row-level security: it sees only rows whose scopes are all among
        `scopes` (`[]` = public rows only), whatever SQL it runs. When the block ends the connection
        is reset and kept for a later block of the same role and scopes (`ConfinedConnections`).
        `commit()` inside the block is refused, because committing would end the block's
        transaction half-way through.
        """
        if scopes is None:
            with self._pool.connection() as connection:
                yield connection
            return
        caller_scopes = normalize_scopes(scopes)
        key: ConfinedKey = (role, caller_scopes)
        kept = self._confined.checkout(key)
        try:
            if kept is not None:
                try:
                    _publish_scopes(kept.connection, self._logins[key], caller_scopes)
                except psycopg.OperationalError:
                    # The server ended the kept connection (a restart, an idle timeout): open another.
                    kept.connection.close()
                    kept = None
            if kept is None:
                kept, login = self._open_confined(key)
                _publish_scopes(kept.connection, login, caller_scopes)
            with kept.connection.transaction():
                yield kept.connection
        finally:
            self._confined.checkin(key, kept)

    def close(self) -> None:
        self._confined.close()
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
        if one_row(connection.execute("SELECT pg_is_in_recovery()"), "whether the server is a standby")[0]:
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

    def settings_path(self) -> Path:
        """The lanes.yaml this database follows: `config_path`, else LANEGRAPH_CONFIG or lanes.yaml."""
        return Path(self.config_path) if self.config_path else default_config_path()

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._database = open_database(self.settings_path(), url=self.database_url or None)

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
