"""`lanegraph eval --dataset PATH`: retrieval quality per arm on a benchmark, with ablations.

The dataset (../shared/data format) is built into its own database, every arm answers the chosen
questions there, and the table (Recall@k, nDCG@10, MRR, answer coverage when the dataset has
answers, p50/p95 latency, the difference from dense-only with its paired-test p-value) is printed; `--json OUT` also writes the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipelines.cli import COMMAND_HELP
from pipelines.cli.options import add_dataset_options
from pipelines.evaluation.report import category_table, text_table
from pipelines.evaluation.run import DEFAULT_CUTOFFS, EvaluationRequest, evaluate
from pipelines.errors import InputError


def _cutoffs(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected cutoffs like 2,5,10, got {text!r}") from None


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "eval",
        help=COMMAND_HELP["eval"],
        description=(
            "Build the dataset into its own database (reused while corpus and write settings are "
            "unchanged), run every question through each arm and print Recall@k, nDCG@10, MRR, "
            "answer coverage (Ans@budget: a gold answer in the evidence packed into the token budget) "
            "and latency, with each arm's difference from dense-only under a paired randomization test."
        ),
    )
    add_dataset_options(
        parser,
        dataset_help="dataset JSON (corpus + queries with gold_ids)",
        queries_help="evaluate only the first N questions of the split",
    )
    parser.add_argument(
        "--split",
        choices=("dev", "train", "all"),
        default="dev",
        help="dev = questions not marked train (default); train is for tuning only",
    )
    parser.add_argument(
        "--arms",
        nargs="+",
        metavar="ARM",
        help="arms to run (default: all): bm25 dense ppr sources find find-minus-<lane|part> (commas also separate)",
    )
    parser.add_argument("--k", type=_cutoffs, default=DEFAULT_CUTOFFS, metavar="K,K,...", help="Recall@k cutoffs (default 2,5,10)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report as JSON to OUT")
    parser.add_argument(
        "--lanes",
        type=Path,
        nargs="+",
        default=[],
        metavar="PATH",
        help="extra lanes.yaml files, each an arm named after its file (retrieval settings only; same build)",
    )
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild the dataset's database from empty even if its corpus and write settings are unchanged",
    )
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    for path in (arguments.dataset, *arguments.lanes):
        if not path.is_file():
            raise InputError(f"{path}: no such file")
    from pipelines.definitions import defs

    arms = tuple(name for entry in arguments.arms or () for name in entry.split(",") if name)
    request = EvaluationRequest(
        dataset=arguments.dataset,
        definitions=defs,
        split=arguments.split,
        queries=arguments.queries,
        arms=arms,
        cutoffs=arguments.k,
        lanes_files=tuple(arguments.lanes),
        rebuild=arguments.rebuild,
    )
    report = evaluate(request, progress=lambda message: print(message, file=sys.stderr, flush=True))
    print(text_table(report))
    if categories := category_table(report):
        print(f"\nper question category:\n{categories}")
    if arguments.json:
        arguments.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"report written to {arguments.json}", file=sys.stderr)
    return 0
