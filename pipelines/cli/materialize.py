"""`lanegraph materialize [ASSET...] [--json]`: run assets by name (all when none are named);
per-document assets run over every registered source file in one run."""

from __future__ import annotations

import argparse
import sys

from pipelines.cli import COMMAND_HELP
from pipelines.cli.ingest import print_report, progress_on_stderr, quiet_dagster
from pipelines.cli.options import add_executor_option, add_full_graph_option, graph_run_config


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "materialize", help=COMMAND_HELP["materialize"]
    )
    parser.add_argument(
        "assets", nargs="*", metavar="ASSET", help="asset names, e.g. chunk_embeddings communities"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_executor_option(parser)
    add_full_graph_option(parser)
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    quiet_dagster()
    from pipelines.definitions import LOCATION, defs
    from pipelines.orchestration.runner import materialize

    with progress_on_stderr():
        report = materialize(
            arguments.assets, definitions=defs, location=LOCATION, executor=arguments.executor,
            run_config=graph_run_config(arguments),
        )
    if not report.assets:
        print(
            "nothing materialized: no source files are registered yet (run `lanegraph ingest PATH`)",
            file=sys.stderr,
        )
    return print_report(report, as_json=arguments.json)
