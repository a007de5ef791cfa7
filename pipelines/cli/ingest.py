"""`lanegraph ingest PATH [--json] [--no-graph] [--full-graph]`: register a folder or JSONL file and
materialize everything its new, changed and removed files affect, then the graph-wide assets
(incrementally unless --full-graph)."""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipelines.cli import COMMAND_HELP
from pipelines.cli.options import add_write_options, graph_run_config
from pipelines.errors import InputError
from pipelines.write.progress import StepProgress, listening
from pipelines.orchestration.runner import PLAIN_COUNTS, WriteReport


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "ingest", help=COMMAND_HELP["ingest"]
    )
    parser.add_argument("path", type=Path, help="a folder of .md/.txt/.jsonl files, or one such file")
    parser.add_argument("--no-graph", action="store_true", help="skip the graph-wide assets (group graph)")
    add_write_options(parser)
    parser.add_argument(
        "--wait-for-replicas", type=float, metavar="SECONDS",
        help="afterwards, wait up to SECONDS until every read server (LANEGRAPH_READ_URLS) has replayed "
        "the ingest, so reads there see it; one that has not is named (exit status 2)",
    )
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from pipelines.orchestration.runner import ingest

    report = run_write_side(ingest, arguments, arguments.path, refresh_graph=not arguments.no_graph)
    if not report.partitions and report.registration is not None:
        sources = len(report.registration.keys)
        print(f"{arguments.path}: {sources} source file(s), nothing new to materialize", file=sys.stderr)
    status = print_report(report, as_json=arguments.json)
    if arguments.wait_for_replicas is not None:
        wait_for_read_servers(arguments.wait_for_replicas)
    return status


def run_write_side(
    write: Callable[..., WriteReport], arguments: argparse.Namespace, *targets: object, **options: Any
) -> WriteReport:
    """`write` (the runner's ingest or materialize) of `targets` with the project's definitions,
    the executor and graph run config of add_write_options, and progress on stderr."""
    quiet_dagster()
    from pipelines.definitions import LOCATION, defs

    with progress_on_stderr():
        return write(
            *targets, definitions=defs, location=LOCATION, executor=arguments.executor,
            run_config=graph_run_config(arguments), **options,
        )


def wait_for_read_servers(timeout_seconds: float) -> None:
    """Read-your-writes: block until every read server replayed the primary's WAL as it is now
    (the ingest's last commit included)."""
    from pipelines.resources.database import open_database
    from pipelines.resources.read_servers import READ_URLS_ENV, ReadServers, current_wal_lsn

    with open_database() as primary:
        reads = ReadServers.from_environment(primary)
        if reads is None:
            raise InputError(f"--wait-for-replicas: no read servers to wait for; name them in {READ_URLS_ENV}")
        with reads:
            lsn = current_wal_lsn(primary)
            waited = reads.wait_for_replay(lsn, timeout_seconds)
    replayed = ", ".join(f"{name} after {seconds:.2f} s" for name, seconds in waited.items())
    print(f"read servers replayed the ingest (WAL {lsn}): {replayed}", file=sys.stderr)


def quiet_dagster() -> None:
    """Dagster flags beta parameters (backfill_policy) on every import; users cannot act on it."""
    warnings.filterwarnings("ignore", module="dagster")


@contextmanager
def progress_on_stderr(redraw_seconds: float = 0.5) -> Iterator[None]:
    """Each long step's progress on stderr: one line redrawn in place on a terminal, else the
    step's paced lines (the ones its run log gets), so a log file is not flooded."""
    interactive = sys.stderr.isatty()
    last_drawn: dict[tuple[str, str], float] = {}

    def show(progress: StepProgress) -> None:
        if not interactive:
            if progress.logged:
                sys.stderr.write(progress.line() + "\n")
                sys.stderr.flush()
            return
        now = time.monotonic()
        phase = (progress.step, progress.unit)
        if not progress.finished and now - last_drawn.get(phase, 0.0) < redraw_seconds:
            return
        last_drawn[phase] = now
        sys.stderr.write(f"\r\033[K{progress.line()}" + ("\n" if progress.finished else ""))
        sys.stderr.flush()

    with listening(show):
        yield


def print_report(report: WriteReport, *, as_json: bool) -> int:
    """Skipped input first (the reason of each refused file or JSONL line), then per-asset counts and
    checks. Exit status 1 when any input was skipped or a check failed, so a script never takes a
    partial ingest for success; 0 when everything given was ingested."""
    if as_json:
        print(json.dumps(report.summary(), indent=2))
    else:
        for line in report.skipped:
            print(f"skipped {line}")
        if report.assets:
            width = max(len(name) for name in report.assets)
            print(f"{'asset':<{width}}" + "".join(f"{name:>11}" for name in PLAIN_COUNTS))
            for name in report.assets:
                counts = report.counts(name)
                cells = "".join(f"{counts.get(column, ''):>11}" for column in PLAIN_COUNTS)
                print(f"{name:<{width}}{cells}")
        for check, passed in sorted(report.checks.items()):
            print(f"check {check}: {'passed' if passed else 'FAILED'}")
        if report.skipped:
            print(f"{len(report.skipped)} input(s) skipped; see the lines above")
    return 0 if all(report.checks.values()) and not report.skipped else 1
