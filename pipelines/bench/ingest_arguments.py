"""The ingest benchmark's command line, apart from the benchmark: `lanegraph bench` registers it at
start-up, which must not load Dagster and the write side as `pipelines.bench.ingest` does."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", type=Path, help="an evaluation dataset (e.g. musique.json)")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N passages")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report to this file")
