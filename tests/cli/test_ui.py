"""`lanegraph ui`: SIGTERM stops every process Dagster started and frees the port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.cli.ui import HOST, lineage_url

# dagster dev loads the code location in two processes; on a loaded two-core machine that takes
# a minute or more.
START_TIMEOUT_SECONDS = 240.0
# lanegraph ui waits STOP_GRACE_SECONDS before SIGKILL, and then for the group to be gone.
STOP_TIMEOUT_SECONDS = 60.0
PROC = Path("/proc")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def answers(port: int) -> bool:
    try:
        socket.create_connection((HOST, port), timeout=1).close()
        return True
    except OSError:
        return False


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
            return True
        except OSError:
            return False


def stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: state, ppid, pgrp, ...; None once the process is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()


def live_members(group: int) -> list[int]:
    """Processes of the group that still run; a zombie has ended and only waits to be reaped."""
    members = []
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (fields := stat_fields(int(entry.name))) and int(fields[2]) == group and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def children(pid: int) -> list[int]:
    return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit() and (fields := stat_fields(int(entry.name))) and int(fields[1]) == pid]


def test_lineage_link_opens_every_group() -> None:
    assert lineage_url(3000) == (
        "http://127.0.0.1:3000/asset-groups?expanded="
        "global%40global%3Adocuments,global%40global%3Agraph,global%40global%3Asession,global%40global%3Aread"
    )


def test_a_taken_port_is_refused_in_one_line() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "ui", "--port", str(port)], capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 2
    assert result.stderr.strip() == f"lanegraph: error: --port {port}: {HOST}:{port} is taken (Address already in use); choose another port"


@pytest.mark.slow
@pytest.mark.skipif(not PROC.is_dir(), reason="reads process groups from /proc")
def test_sigterm_stops_every_dagster_process_and_frees_the_port(server_url: str, tmp_path: Path) -> None:
    # server_url: the session's database runs already, so no sensor tick starts one under the UI.
    port = free_port()
    # A file, not a pipe: Dagster's processes log plenty, and a full pipe nobody reads would block them.
    output = tmp_path / "ui.log"
    ui = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "ui", "--port", str(port)],
        stdout=output.open("w"), stderr=subprocess.STDOUT, text=True,
    )
    group = None
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not answers(port):
            assert ui.poll() is None, f"lanegraph ui ended early: {output.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"nothing answered on port {port} after {START_TIMEOUT_SECONDS} s"
            time.sleep(0.5)
        (dagster,) = children(ui.pid)
        group = os.getpgid(dagster)
        assert group == dagster != os.getpgid(ui.pid), "dagster dev leads a process group of its own"
        started = live_members(group)
        assert len(started) >= 3, "dagster dev, its webserver, daemon and code server"

        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=STOP_TIMEOUT_SECONDS)

        assert ui.returncode == 0, output.read_text()[-2000:]
        assert live_members(group) == [], f"still running of {started}"
        assert port_is_free(port)
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait()
        if group is not None and live_members(group):
            os.killpg(group, signal.SIGKILL)
