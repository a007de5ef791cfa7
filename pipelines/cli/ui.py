"""`lanegraph ui`: the Dagster UI (with its daemon, so sensors and schedules run) on 127.0.0.1."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from pipelines.cli import COMMAND_HELP
from pipelines.config import data_dir
from pipelines.orchestration.dagster_home import ensure_dagster_home


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("ui", help=COMMAND_HELP["ui"])
    parser.add_argument("--port", type=int, default=3000, help="port on 127.0.0.1 (default 3000)")
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    home = ensure_dagster_home()
    print(f"Dagster UI on http://127.0.0.1:{arguments.port} (DAGSTER_HOME={home}); Ctrl-C stops it")
    command = [
        sys.executable, "-m", "dagster", "dev",
        "--host", "127.0.0.1", "--port", str(arguments.port),
        "--module-name", "pipelines.definitions",
    ]
    return subprocess.call(command, env={**os.environ, "DAGSTER_HOME": str(home), "LANEGRAPH_DATA_DIR": str(data_dir())})
