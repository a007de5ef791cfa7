"""Options several commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pipelines.config import LanegraphConfig, load_config
from pipelines.orchestration.executors import EXECUTORS, MULTIPROCESS_MIN_CPUS, MULTIPROCESS_MIN_SOURCE_BYTES

Number = TypeVar("Number", int, float)


def positive(parse: Callable[[str], Number], what: str) -> Callable[[str], Number]:
    """An argparse type: the text read by `parse` (int or float), refused unless above zero."""

    def read(text: str) -> Number:
        try:
            value = parse(text)
        except ValueError:
            value = None
        if value is None or not value > 0:  # `not >` refuses NaN too
            raise argparse.ArgumentTypeError(f"expected a positive {what}, got {text!r}")
        return value

    return read


def add_dataset_options(parser: argparse.ArgumentParser, *, dataset_help: str, queries_help: str) -> None:
    """--dataset (a benchmark JSON, ../shared/data format) and --queries (only its first N questions)."""
    parser.add_argument("--dataset", type=Path, required=True, metavar="PATH", help=dataset_help)
    parser.add_argument("--queries", type=positive(int, "number of questions"), metavar="N", help=queries_help)


def add_lanes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lanes",
        type=Path,
        metavar="PATH",
        help="settings file to read instead of lanes.yaml (or LANEGRAPH_CONFIG)",
    )


def lanes_config(arguments: argparse.Namespace) -> LanegraphConfig:
    return load_config(arguments.lanes)


def add_write_options(parser: argparse.ArgumentParser) -> None:
    """The options of a command that runs the write side: --json, --executor and --full-graph."""
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="auto",
        help="where the steps run: one after another in this process, or side by side in one process "
        f"each (Dagster's multiprocess executor); auto takes the latter from {MULTIPROCESS_MIN_SOURCE_BYTES:,} "
        f"bytes of sources on, with {MULTIPROCESS_MIN_CPUS} or more usable CPUs",
    )
    parser.add_argument(
        "--full-graph",
        action="store_true",
        help="rebuild communities, profiles and the RAPTOR tree in full instead of redoing only what the "
        "changed documents touched (what the weekly schedule does)",
    )


def graph_run_config(arguments: argparse.Namespace) -> dict[str, object] | None:
    """The run config that --full-graph asks for, or None for the assets' defaults (incremental)."""
    from pipelines.defs.write.graph_schedule import full_rebuild_config

    return full_rebuild_config() if arguments.full_graph else None
