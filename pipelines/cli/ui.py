"""`lanegraph ui`: the Dagster UI (with its daemon, so sensors and schedules run) on 127.0.0.1.

`dagster dev` starts a webserver, a daemon and code servers of its own. They run in a session of
their own, so that stopping `lanegraph ui` (Ctrl-C, SIGTERM) stops all of them together and never
leaves one holding the port.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from urllib.parse import quote

from pipelines.cli import COMMAND_HELP
from pipelines.config import data_dir
from pipelines.errors import InputError
from pipelines.orchestration.dagster_home import ensure_dagster_home
from pipelines.orchestration.groups import GRAPH_GROUP, PER_DOCUMENT_GROUP, READ_GROUP, SESSION_GROUP

HOST = "127.0.0.1"
# Dagster's processes get this long to shut down after SIGTERM before they are killed.
STOP_GRACE_SECONDS = 15.0
# The lineage opens with a group collapsed unless the page's `expanded` parameter names it; Dagster
# has no setting for it. The id is the UI's own ("global@global:" + group name).
LINEAGE_GROUPS = (PER_DOCUMENT_GROUP, GRAPH_GROUP, SESSION_GROUP, READ_GROUP)


class _StopRequested(Exception):
    """SIGTERM (or SIGINT) arrived: stop Dagster's processes and return."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("ui", help=COMMAND_HELP["ui"])
    parser.add_argument("--port", type=int, default=3000, help="port on 127.0.0.1 (default 3000)")
    parser.set_defaults(handler=run)


def lineage_url(port: int) -> str:
    expanded = ",".join(f"global@global:{group}" for group in LINEAGE_GROUPS)
    return f"http://{HOST}:{port}/asset-groups?expanded={quote(expanded, safe=',')}"


def refuse_busy_port(port: int) -> None:
    """dagster dev on a taken port fails deep in its webserver's start; say so before starting it."""
    if not 0 < port < 65536:
        raise InputError(f"--port {port}: not a TCP port (1 to 65535)")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
        except OSError as error:
            raise InputError(f"--port {port}: {HOST}:{port} is taken ({error.strerror}); choose another port") from None


def run(arguments: argparse.Namespace) -> int:
    refuse_busy_port(arguments.port)
    home = ensure_dagster_home()
    print(f"Dagster UI on http://{HOST}:{arguments.port} (DAGSTER_HOME={home}); Ctrl-C stops it")
    print(f"lineage with every group open: {lineage_url(arguments.port)}", flush=True)
    command = [
        sys.executable, "-m", "dagster", "dev",
        "--host", HOST, "--port", str(arguments.port),
        "--module-name", "pipelines.definitions",
    ]
    environment = {**os.environ, "DAGSTER_HOME": str(home), "LANEGRAPH_DATA_DIR": str(data_dir())}
    dagster: subprocess.Popen | None = None
    with _stop_requested_on_signals():
        try:
            dagster = subprocess.Popen(command, env=environment, start_new_session=True)
            return dagster.wait()
        except _StopRequested:
            if dagster is not None:
                stop_process_group(dagster, STOP_GRACE_SECONDS)
            print("Dagster UI stopped", file=sys.stderr)
            return 0


@contextmanager
def _stop_requested_on_signals() -> Iterator[None]:
    """The first SIGTERM or SIGINT raises _StopRequested inside, later ones are ignored (a second
    Ctrl-C must not break off the stop half done); the previous handlers come back after. In a
    session of its own Dagster no longer gets the terminal's Ctrl-C, so this process passes it on."""
    requested = False

    def request_stop(number: int, frame: FrameType | None) -> None:
        nonlocal requested
        if not requested:
            requested = True
            raise _StopRequested(signal.Signals(number).name)

    previous = {number: signal.signal(number, request_stop) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def stop_process_group(leader: subprocess.Popen, grace_seconds: float) -> None:
    """SIGTERM to every process of the leader's group, SIGKILL to those left after `grace_seconds`;
    returns once none is left (the leader's children outlive it unless waited for)."""
    group = leader.pid
    _signal_group(group, signal.SIGTERM)
    if not _wait_for_empty_group(leader, grace_seconds):
        _signal_group(group, signal.SIGKILL)
        _wait_for_empty_group(leader, grace_seconds)


def _signal_group(group: int, number: signal.Signals) -> None:
    try:
        os.killpg(group, number)
    except ProcessLookupError:
        pass


def _wait_for_empty_group(leader: subprocess.Popen, timeout_seconds: float) -> bool:
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        leader.poll()
        try:
            os.killpg(leader.pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False
