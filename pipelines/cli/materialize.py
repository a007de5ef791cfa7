"""`lanegraph materialize [ASSET...] [--json]`: run assets by name (all when none are named);
per-document assets run over every registered source file in one run."""

from __future__ import annotations

import argparse
import sys

from pipelines.cli import COMMAND_HELP
from pipelines.cli.ingest import print_report, run_write_side
from pipelines.cli.options import add_write_options


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "materialize", help=COMMAND_HELP["materialize"]
    )
    parser.add_argument(
        "assets", nargs="*", metavar="ASSET", help="asset names, e.g. chunk_embeddings communities"
    )
    add_write_options(parser)
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from pipelines.orchestration.runner import materialize

    report = run_write_side(materialize, arguments, arguments.assets)
    if not report.assets:
        print(
            "nothing materialized: no source files are registered yet (run `lanegraph ingest PATH`)",
            file=sys.stderr,
        )
    return print_report(report, as_json=arguments.json)
