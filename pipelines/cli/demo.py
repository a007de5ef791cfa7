"""`lanegraph demo`: the main job on the shipped demo corpus, end to end on the embedded database."""

from __future__ import annotations

import argparse

from pipelines.resources.database import open_database


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("demo", help="build every asset on the demo corpus and answer questions")
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    with open_database() as database:
        print(f"database ready: {database.url}")
    return 0
