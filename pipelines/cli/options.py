"""Options several commands share."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipelines.config import LanegraphConfig, load_config


def add_lanes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lanes",
        type=Path,
        metavar="PATH",
        help="settings file to read instead of lanes.yaml (or LANEGRAPH_CONFIG)",
    )


def lanes_config(arguments: argparse.Namespace) -> LanegraphConfig:
    return load_config(arguments.lanes)
