"""`lanegraph explain "question" [--json] [--lanes PATH]`: EXPLAIN ANALYZE with time per lane."""

from __future__ import annotations

import argparse
import json

from pipelines.cli import COMMAND_HELP
from pipelines.cli.options import add_lanes_option, lanes_config
from pipelines.read.explain import explain_find
from pipelines.resources.database import open_database


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("explain", help=COMMAND_HELP["explain"])
    parser.add_argument("question", help="the question, as plain text")
    parser.add_argument("--json", action="store_true", help="print lane times and the JSON plan")
    add_lanes_option(parser)
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    config = lanes_config(arguments)
    with open_database(arguments.lanes) as database:
        report = explain_find(database, arguments.question, config=config)
    if arguments.json:
        lanes = [timing.__dict__ for timing in report.lanes]
        print(json.dumps({"question": report.question, "lanes": lanes,
                          "planning_ms": report.planning_ms, "execution_ms": report.execution_ms,
                          "settings": report.settings,
                          "plan": report.plan}, indent=2))
    else:
        print(report.render())
    return 0
