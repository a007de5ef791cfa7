"""A fork server for write-side runs that a test can kill: `python -m tests.reliability.write_worker`.

Importing Dagster and the code location costs seconds of CPU; a crash test needs a dozen runs. The
worker imports once, then forks one child per run, so each run starts warm and can still die alone.
It opens no connection and starts no thread itself, which keeps forking safe.

Protocol, one JSON object per line: `{"op": "start", "job": {...}}` answers `{"pid": P}`;
`{"op": "wait", "pid": P}` answers `{"exit": CODE}` (negative: killed by that signal). A job is
`url`, `corpus`, `home` (DAGSTER_HOME), `log` (the child's output), `result` (where the child
writes `{"statements": N}`), optionally `graph` = false (the per-document run only, as a run killed
right after it leaves things), optionally `command` = "materialize" (every write-side asset, as
`lanegraph materialize` runs them, in full for the graph with `full_graph` = true; `corpus` unused),
and optionally `kill_at` = N: just before its N-th SQL statement or
commit the run SIGKILLs itself, after first SIGKILLing every process of the database server whose
postmaster is `postmaster_pid` when `kill` = "server".

The embedder is the instant word-hash one and the extractor the rule-based one: the crash test
repeats the run many times and compares tables, so each run must be quick and deterministic.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import traceback
from pathlib import Path

import dagster as dg
import psycopg

from pipelines.config import load_config
from pipelines.orchestration.dagster_home import ensure_dagster_home
from pipelines.definitions import defs
from pipelines.defs.write.graph_schedule import full_rebuild_config
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.write.summaries.summarizer import SummarizerResource
from pipelines.orchestration.runner import ingest, materialize
from tests.reliability.tenancy import HashedEmbedderResource


HANG_REPORT_SECONDS = 240


def definitions() -> dg.Definitions:
    return dg.Definitions(
        assets=defs.assets,
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        resources={
            "extractor": ExtractorResource(provider="rules"),
            "summarizer": SummarizerResource(),
            **(defs.resources or {}),
            "embedder": HashedEmbedderResource(dimension=load_config().pipeline.embedding.dimension),
        },
    )


def server_processes(postmaster_pid: int) -> list[int]:
    """The postmaster and every process it started (backends, checkpointer, WAL writer, ...)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == postmaster_pid:
                children.append(int(entry.name))
    return [postmaster_pid, *children]


class FaultAtStatement:
    """Counts SQL statements and commits on every connection of the process; at the N-th, the fault."""

    def __init__(self, job: dict) -> None:
        self.kill_at = job.get("kill_at")
        self.kill = job.get("kill", "self")
        self.postmaster_pid = job.get("postmaster_pid")
        self.count = 0

    def tick(self) -> None:
        self.count += 1
        if self.count != self.kill_at:
            return
        if self.kill == "server":
            for pid in server_processes(self.postmaster_pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        # The run dies too, as on a machine that lost power: carrying on into the dead server only
        # waits out the pool's 30 s connection timeout once per remaining step before failing.
        os.kill(os.getpid(), signal.SIGKILL)

    def install(self) -> None:
        fault = self
        for owner, name in (
            (psycopg.Cursor, "execute"), (psycopg.Cursor, "executemany"), (psycopg.Cursor, "copy"),
            (psycopg.Connection, "commit"),
        ):
            original = getattr(owner, name)

            def counted(self, *args, __original=original, **kwargs):  # type: ignore[no-untyped-def]
                fault.tick()
                return __original(self, *args, **kwargs)

            setattr(owner, name, counted)


def _run_child(job: dict) -> None:
    """In the forked child: run the ingest, write the result, and leave without running finalizers."""
    log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    # A run that hangs leaves its stacks in the log, where the test's failure message shows them.
    faulthandler.dump_traceback_later(HANG_REPORT_SECONDS, exit=False)
    status = 1
    try:
        os.environ["DAGSTER_HOME"] = job["home"]
        ensure_dagster_home()
        fault = FaultAtStatement(job)
        fault.install()
        with dg.DagsterInstance.get() as instance:
            if job.get("command") == "materialize":
                materialize(
                    definitions=definitions(), instance=instance, database_url=job["url"],
                    run_config=full_rebuild_config() if job.get("full_graph") else None,
                )
            else:
                ingest(
                    Path(job["corpus"]), definitions=definitions(), instance=instance, database_url=job["url"],
                    refresh_graph=job.get("graph", True),
                )
        Path(job["result"]).write_text(json.dumps({"statements": fault.count}))
        status = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "start":
            pid = os.fork()
            if pid == 0:
                _run_child(request["job"])
            reply: dict = {"pid": pid}
        else:
            _, status = os.waitpid(request["pid"], 0)
            reply = {"exit": os.waitstatus_to_exitcode(status)}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    serve()
