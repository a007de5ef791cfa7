"""The ingest benchmark's command line, apart from the benchmark: `lanegraph bench` registers it at
start-up, which must not load Dagster and the write side as `pipelines.bench.ingest` does. Corpus
sizes are read here for both: `lanegraph bench --chunks` and `lanegraph bench ingest --synthetic`."""

from __future__ import annotations

import argparse
from pathlib import Path

_SUFFIXES = {"k": 1_000, "m": 1_000_000}


def parse_sizes(text: str) -> tuple[int, ...]:
    """`2000`, `10k`, `100k,1M`: chunk counts, comma-separated, with k and M suffixes."""
    sizes = []
    for part in (p.strip().lower() for p in text.split(",")):
        multiplier = _SUFFIXES.get(part[-1:], 1)
        digits = part[:-1] if part[-1:] in _SUFFIXES else part
        if not digits.isdigit() or int(digits) * multiplier < 8:
            raise argparse.ArgumentTypeError(f"{part!r} is not a corpus size (e.g. 2000, 10k, 1M; at least 8)")
        sizes.append(int(digits) * multiplier)
    return tuple(sizes)


def parse_size(text: str) -> int:
    """One corpus size, as `parse_sizes` reads each."""
    sizes = parse_sizes(text)
    if len(sizes) != 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not one corpus size (e.g. 100k)")
    return sizes[0]


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    corpus = parser.add_mutually_exclusive_group(required=True)
    corpus.add_argument("dataset", type=Path, nargs="?", help="an evaluation dataset (e.g. musique.json)")
    corpus.add_argument(
        "--synthetic", type=parse_size, metavar="N",
        help="instead: the synthetic corpus of N chunks that `lanegraph bench --chunks N` reads (e.g. 100k), "
        "its documents through the write side",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N passages")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report to this file")
