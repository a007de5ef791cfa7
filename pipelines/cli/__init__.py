"""`lanegraph`: the command line. Each subcommand lives in its own module with a `register` function.

A `LanegraphError` (a mistake the user can fix) ends as one line on stderr and exit status 2, and so
does a database fault (the server stopped, restarted or ended the session, a statement timeout);
only a real bug shows a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module

from pipelines.errors import LanegraphError, database_fault

# One module per command, in the order of `lanegraph --help`. The one-line help lives here so
# that `lanegraph --help` lists every command without importing any (Dagster, torch, ranx: seconds).
COMMAND_HELP = {
    "demo": "build every asset on the demo corpus and answer questions",
    "db": "start, stop, inspect or migrate the database",
    "ingest": "add a folder (markdown, text, JSONL) or a JSONL file and build everything it affects",
    "materialize": "run assets by name (default: every write-side asset), with per-asset counts",
    "find": "answer-ready evidence for a question, from one SQL statement",
    "explain": "run the find statement under EXPLAIN ANALYZE, time per lane",
    "compile": "print the find statement lanes.yaml compiles to",
    "check": "prove the find statement plan-cacheable (six properties) and check the fusion primitives",
    "eval": "measure retrieval quality per arm (BM25, dense, sources, find, ablations) on a benchmark",
    "tune": "search retrieval settings on a dataset's train questions (Optuna), judge them on dev",
    "ui": "open the Dagster UI for the Lanegraph assets",
    "bench": "time find against its index floor and per-lane round trips on synthetic corpora",
    "serve": "serve find and working memory over HTTP and MCP, each request as its API token's caller",
    "token": "create, list or revoke the API tokens `lanegraph serve` admits",
}
COMMAND_MODULES = tuple(COMMAND_HELP)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(command_names: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lanegraph",
        description="PostgreSQL-native graph-RAG: build the graph with Dagster, answer with one SQL statement.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        if name in command_names:
            import_module(f"pipelines.cli.{name}").register(commands)
        else:
            commands.add_parser(name, help=COMMAND_HELP[name])
    return parser


def _commands_needed(argv: Sequence[str]) -> Sequence[str]:
    """Only the named command's module; none for `lanegraph --help` or a mistyped command."""
    first = next((argument for argument in argv if not argument.startswith("-")), None)
    return (first,) if first in COMMAND_MODULES else ()


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_commands_needed(argv))
    # Only a command that hands its extra arguments on (db psql) accepts any.
    arguments, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(arguments, "passes_unknown_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    arguments.unknown_arguments = unknown
    try:
        return int(arguments.handler(arguments) or 0)
    except LanegraphError as error:
        print(f"lanegraph: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        fault = database_fault(error)
        if fault is None:
            raise
        print(f"lanegraph: error: {fault}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lanegraph: interrupted", file=sys.stderr)
        return 130

