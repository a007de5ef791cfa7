"""`lanegraph check [--lanes PATH] [--offline]`: prove the find statement plan-cacheable, and check
every template a plan could turn on (the lanes and parts this one leaves off, compiled in a maximal
plan) and every fusion primitive template under the same rules.

A template or setting that breaks a rule (a literal LIMIT, a misspelled column, an unknown
setting) fails compilation with one line naming the lane, file and line (exit 2); a property that
does not hold on the database fails with exit 1 after the full report.
"""

from __future__ import annotations

import argparse

from pipelines.cli import COMMAND_HELP
from pipelines.cli.options import add_lanes_option, lanes_config
from pipelines.fusion.primitives import check_primitives
from pipelines.read.cacheability import check_cacheability, check_templates_left_off
from pipelines.read.compiler import compile_find
from pipelines.read.templates import display_path
from pipelines.resources.database import open_database


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("check", help=COMMAND_HELP["check"])
    add_lanes_option(parser)
    parser.add_argument(
        "--offline",
        action="store_true",
        help="only the checks that need no database (binds only, schema, shape only)",
    )
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    config = lanes_config(arguments)
    # Template and setting mistakes surface here, before a database is started or reached: the
    # lanes the plan compiles, those it leaves off, and every fusion primitive the product ships.
    statement = compile_find(config)
    left_off = check_templates_left_off(config, statement)
    if left_off:
        names = ", ".join(display_path(path) for path in left_off)
        print(f"templates this plan leaves off: {len(left_off)} compile in the maximal plan ({names})")
    primitives = check_primitives()
    print(f"fusion primitives: {len(primitives)} templates compile (binds only, schema checked)")
    if arguments.offline:
        report = check_cacheability(config)
    else:
        with open_database(arguments.lanes) as database:
            report = check_cacheability(config, database)
    print(report.render())
    return 0 if report.passed else 1
