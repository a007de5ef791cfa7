"""Read servers: hot standbys that serve reads (find, eval, the fusion client) while the primary takes
every write.

`LANEGRAPH_READ_URLS` names them, comma-separated. A physical standby holds every database of its
primary, so a read URL names a server: the database name and connection options always come from
the primary's URL (the eval's own database, a test's schema). Reads go round-robin over the servers;
a server that does not answer, or whose replay is more than `LANEGRAPH_READ_MAX_LAG_SECONDS` behind,
is skipped, and the read falls to the next server and finally to the primary, with the skip said in
the outcome's degraded reason. A server that fails mid-read is skipped the same way and the read is
run again elsewhere: a read changes nothing, so nothing is lost by running it twice.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import psycopg

from pipelines.resources.database import Database, connect
from pipelines.errors import DatabaseError, InputError
from pipelines.resources.rows import one_row

READ_URLS_ENV = "LANEGRAPH_READ_URLS"
MAX_LAG_ENV = "LANEGRAPH_READ_MAX_LAG_SECONDS"
DEFAULT_MAX_LAG_SECONDS = 30.0
# How long a server's health (answering, lag) is trusted before it is asked again.
HEALTH_SECONDS = 2.0
PRIMARY = "primary"
REPLAY_POLL_SECONDS = 0.05
# Behind in seconds, the usual standby check: zero once the standby replayed what the primary had
# written when asked, or everything it received while it streams (WAL in flight is not lag);
# otherwise the age of the last transaction it replayed (zero before it replayed any: maintenance
# WAL after the base backup, no commit yet). After a long idle spell that age can overstate a
# moment's lag until the standby replays the new commit, milliseconds later.
STANDBY_LAG = """
SELECT pg_is_in_recovery(),
       CASE WHEN pg_last_wal_replay_lsn() >= %s::pg_lsn THEN 0
            WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
                 AND EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming') THEN 0
            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)
       END::float8
"""
T = TypeVar("T")


def parse_read_urls(text: str) -> list[str]:
    urls = [url.strip() for url in text.split(",")]
    if not all(urls):
        raise InputError(f"{READ_URLS_ENV}: empty URL in {text!r}; separate connection strings with single commas")
    return urls


def max_lag_from_environment() -> float:
    text = os.environ.get(MAX_LAG_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_LAG_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise InputError(f"{MAX_LAG_ENV}: expected a number of seconds (0 or more), got {text!r}")
    return value


def server_url_for(server_url: str, primary_url: str) -> str:
    """`server_url` reaching the primary's database with the primary's connection options."""
    primary = psycopg.conninfo.conninfo_to_dict(primary_url)
    return psycopg.conninfo.make_conninfo(
        server_url, **{key: primary[key] for key in ("dbname", "options") if primary.get(key)}
    )


def describe_server(url: str) -> str:
    try:
        target = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(not a valid PostgreSQL connection string)"
    return f"{target.get('host') or 'localhost'}:{target.get('port') or 5432}"


def current_wal_lsn(primary: Database) -> str:
    """Where the primary's write-ahead log ends now: every commit so far is at or before it."""
    with primary.connection() as connection:
        return one_row(connection.execute("SELECT pg_current_wal_lsn()::text"), "the primary's WAL position")[0]


def _is_server_failure(error: BaseException) -> bool:
    """A failure of the server or the connection, not of the statement: worth another server.

    A statement cancelled by a timeout or the caller is the caller's decision; a conflict with
    recovery (a standby replaying a change that removes rows the read needs) is retried elsewhere."""
    if isinstance(error, psycopg.errors.QueryCanceled):
        return False
    return isinstance(error, (DatabaseError, psycopg.OperationalError, psycopg.errors.SerializationFailure))


@dataclass(frozen=True)
class ReadOutcome:
    """Which server answered, and the servers skipped on the way (empty when none was)."""

    server: str
    degraded_reason: str


class _ReadServer:
    def __init__(self, name: str, url: str, pool_size: int) -> None:
        self.name = name
        self.url = url
        self.pool_size = pool_size
        self._lock = threading.Lock()
        self._database: Database | None = None
        self._checked_at = float("-inf")
        self._problem = ""

    def problem(self, primary: Database, max_lag_seconds: float) -> str:
        """Why this server cannot serve a read now; empty when it can. Asked at most every
        HEALTH_SECONDS; a failure seen by a read counts as an answer."""
        with self._lock:
            if time.monotonic() - self._checked_at < HEALTH_SECONDS:
                return self._problem
            self._problem = self._check(primary, max_lag_seconds)
            self._checked_at = time.monotonic()
            return self._problem

    def _check(self, primary: Database, max_lag_seconds: float) -> str:
        primary_lsn = current_wal_lsn(primary)
        try:
            with connect(self.url, autocommit=True) as connection:
                in_recovery, lag = one_row(connection.execute(STANDBY_LAG, (primary_lsn,)), "the standby's lag")
        except (DatabaseError, psycopg.Error) as error:
            return f"down ({_first_line(error)})"
        if in_recovery and lag > max_lag_seconds:
            return f"lagging {lag:.1f} s behind the primary (limit {max_lag_seconds:g} s, {MAX_LAG_ENV})"
        return ""

    def failed(self, error: BaseException) -> str:
        with self._lock:
            self._problem = f"failed ({_first_line(error)})"
            self._checked_at = time.monotonic()
            return self._problem

    def database(self) -> Database:
        with self._lock:
            if self._database is None:
                self._database = Database(self.url, max_size=self.pool_size)
            return self._database

    def close(self) -> None:
        if self._database is not None:
            self._database.close()
            self._database = None


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


class ReadServers:
    """The primary and the servers that take its reads. With `include_primary` the primary is one of
    the servers reads rotate over; otherwise it serves a read only when every server is skipped.
    Each read server gets a pool of `pool_size` connections, opened on its first read."""

    def __init__(
        self,
        primary: Database,
        urls: Sequence[str],
        *,
        max_lag_seconds: float = DEFAULT_MAX_LAG_SECONDS,
        include_primary: bool = False,
        pool_size: int = 4,
    ) -> None:
        self.primary = primary
        self.max_lag_seconds = max_lag_seconds
        self.include_primary = include_primary
        self.servers = [
            _ReadServer(f"read{position}", server_url_for(url, primary.url), pool_size)
            for position, url in enumerate(urls, 1)
        ]
        members = len(self.servers) + (1 if include_primary else 0)
        # No read servers at all: every read is the primary's.
        self._turns = itertools.cycle(range(max(members, 1)))
        self._turn_lock = threading.Lock()

    @classmethod
    def from_environment(cls, primary: Database, *, pool_size: int = 4) -> ReadServers | None:
        """The read servers LANEGRAPH_READ_URLS names; None when it names none."""
        text = os.environ.get(READ_URLS_ENV, "").strip()
        if not text:
            return None
        return cls(primary, parse_read_urls(text), max_lag_seconds=max_lag_from_environment(), pool_size=pool_size)

    @property
    def url(self) -> str:
        return self.primary.url

    def describe(self) -> dict[str, str]:
        return {server.name: describe_server(server.url) for server in self.servers}

    def _order(self) -> list[_ReadServer | None]:
        """This read's servers in the order to try them; None stands for the primary."""
        with self._turn_lock:
            first = next(self._turns)
        members: list[_ReadServer | None] = [*self.servers, *([None] if self.include_primary else [])]
        return members[first:] + members[:first]

    def run(self, work: Callable[[Database], T]) -> tuple[T, ReadOutcome]:
        """`work` on the next server in turn that can serve it, else on the primary."""
        skipped: list[str] = []
        for server in self._order():
            if server is None:
                break
            problem = server.problem(self.primary, self.max_lag_seconds)
            if not problem:
                try:
                    return work(server.database()), ReadOutcome(server.name, _skips(skipped))
                except Exception as error:
                    if not _is_server_failure(error):
                        raise
                    problem = server.failed(error)
            skipped.append(f"read server {server.name} ({describe_server(server.url)}) {problem}")
        reason = _skips(skipped)
        return work(self.primary), ReadOutcome(PRIMARY, f"{reason}; read from the primary" if reason else "")

    def wait_for_replay(self, lsn: str, timeout_seconds: float) -> dict[str, float]:
        """Wait until every read server replayed the primary's WAL up to `lsn` (say, the end of an
        ingest); return the seconds each took. A server still behind at the timeout is an error
        that names it and how far it got."""
        started = time.monotonic()
        waited: dict[str, float] = {}
        for server in self.servers:
            replayed = ""
            while True:
                try:
                    with connect(server.url, autocommit=True) as connection:
                        replayed, done = one_row(
                            connection.execute(
                                "SELECT pg_last_wal_replay_lsn()::text, "
                                "coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, true)",
                                (lsn,),
                            ),
                            "the standby's replay position",
                        )
                except DatabaseError as error:
                    replayed, done = f"nothing: {error}", False
                if done:
                    waited[server.name] = time.monotonic() - started
                    break
                if time.monotonic() - started > timeout_seconds:
                    raise DatabaseError(
                        f"read server {server.name} ({describe_server(server.url)}) has not replayed the "
                        f"primary's WAL up to {lsn} within {timeout_seconds:g} s (it replayed {replayed}); "
                        "reads from it may not see the latest writes yet"
                    )
                time.sleep(REPLAY_POLL_SECONDS)
        return waited

    def close(self) -> None:
        """Close the read servers' pools; the primary stays its opener's to close."""
        for server in self.servers:
            server.close()

    def __enter__(self) -> ReadServers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _skips(skipped: Sequence[str]) -> str:
    return "; ".join(skipped)
