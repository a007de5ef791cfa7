"""`lanegraph compile [--lanes PATH] [--json-schema]`: print the find statement a plan compiles to."""

from __future__ import annotations

import argparse

from pipelines.cli import COMMAND_HELP
from pipelines.cli.options import add_lanes_option, lanes_config
from pipelines.read.compiler import compile_find
from pipelines.read.json_schema import lanes_json_schema


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("compile", help=COMMAND_HELP["compile"])
    add_lanes_option(parser)
    parser.add_argument(
        "--json-schema",
        action="store_true",
        help="print the JSON Schema of lanes.yaml (for editors) instead",
    )
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    if arguments.json_schema:
        print(lanes_json_schema(), end="")
        return 0
    print(compile_find(lanes_config(arguments)).annotated_sql(), end="")
    return 0
