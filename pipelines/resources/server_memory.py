"""The embedded server's memory settings, sized for the machine it runs on.

The wheel's initdb leaves PostgreSQL's defaults (shared_buffers 128 MB, effective_cache_size 4 GB),
which at a million chunks hold a tenth of one HNSW graph: most pages of every search then come from
outside the buffer pool. PostgreSQL's tuning guidance is about a quarter of RAM for shared_buffers
and a half to three quarters for effective_cache_size; the embedded server shares its machine with
the pipelines and the embedder, so it takes the conservative ends and a cap.

A pool that large takes a while to fill again after a restart: at a million chunks, the first
hundred questions after one waited 50 to 342 ms at p95 against 21 ms warm, while searches read their
graphs from outside it. pg_prewarm's autoprewarm records which blocks the pool holds and reads them
back in the background at the next start (2.4 GB in 2 to 4 s here); p95 was then 23 to 24 ms.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import psycopg

MB = 1024 * 1024
# Never below what initdb would choose: a small machine keeps today's server.
MIN_SHARED_BUFFERS_MB = 128
# Past this the operating system's cache serves a shared machine better than a bigger pool.
MAX_SHARED_BUFFERS_MB = 8 * 1024
# Limits of the process's control group (v2, then v1); "max" or a huge number means no limit.
CGROUP_MEMORY_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)
MEMORY_SETTINGS = ("shared_buffers", "effective_cache_size")
# Loading the library turns autoprewarm on; it writes autoprewarm.blocks in the data directory.
BUFFER_POOL_KEPT = {"shared_preload_libraries": "pg_prewarm"}
SETTINGS_FILE = "lanegraph_memory.conf"
INCLUDE_LINE = f"include_if_exists = '{SETTINGS_FILE}'"


def memory_settings(memory_bytes: int) -> dict[str, str]:
    """shared_buffers a quarter of `memory_bytes` (128 MB to 8 GB), effective_cache_size half of it
    (never less than shared_buffers)."""
    if memory_bytes <= 0:
        raise ValueError(f"memory size must be positive, got {memory_bytes}")
    memory_mb = memory_bytes // MB
    shared_buffers_mb = min(max(memory_mb // 4, MIN_SHARED_BUFFERS_MB), MAX_SHARED_BUFFERS_MB)
    effective_cache_mb = max(memory_mb // 2, shared_buffers_mb)
    return {"shared_buffers": f"{shared_buffers_mb}MB", "effective_cache_size": f"{effective_cache_mb}MB"}


def machine_memory_bytes() -> int:
    """The RAM this process may use: the machine's, or its container's limit when that is lower."""
    total = psutil.virtual_memory().total
    for limit_file in CGROUP_MEMORY_LIMITS:
        try:
            limit = limit_file.read_text().strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit))
    return total


def write_memory_settings(pgdata: Path, server_user: str | None) -> None:
    """Size the server in `pgdata` for this machine, and keep its buffer pool across restarts, from
    its next start on: the settings go to a file of their own that postgresql.conf includes (so
    `ALTER SYSTEM` still overrides them), and are rewritten at every start, following the machine
    the data directory is on."""
    settings = memory_settings(machine_memory_bytes()) | BUFFER_POOL_KEPT
    target = pgdata / SETTINGS_FILE
    written = target.with_suffix(".tmp")
    written.write_text(
        "# Written by lanegraph at every start of the embedded server: the buffer pool sized for this\n"
        "# machine's memory, and kept across restarts.\n"
        + "".join(f"{name} = '{value}'\n" for name, value in settings.items())
    )
    if server_user is not None:
        shutil.chown(written, server_user, server_user)
    # Replaced whole, so a server starting beside us never reads half a file.
    written.replace(target)
    configuration = pgdata / "postgresql.conf"
    if INCLUDE_LINE not in configuration.read_text().splitlines():
        with configuration.open("a") as lines:
            lines.write(f"\n# lanegraph: the buffer pool sized for the machine and kept across restarts\n{INCLUDE_LINE}\n")


def memory_in_force(connection: psycopg.Connection) -> str:
    """What the server says its memory settings are, for a status line."""
    values = connection.execute(
        "SELECT name, current_setting(name) FROM unnest(%s::text[]) AS s(name)", (list(MEMORY_SETTINGS),)
    ).fetchall()
    return ", ".join(f"{name} {value}" for name, value in values)
