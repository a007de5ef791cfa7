"""`lanegraph find "question" [--k N] [--budget N] [--json] [--trace] [--scopes a,b] [--lanes PATH]`."""

from __future__ import annotations

import argparse
import json

from pipelines.cli.compile import add_lanes_option, lanes_config
from pipelines.read.find import FindResult, find
from pipelines.resources.database import open_database
from pipelines.resources.scopes import parse_scopes


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("find", help="answer-ready evidence for a question, from one SQL statement")
    parser.add_argument("question", help="the question, as plain text")
    parser.add_argument("--k", type=int, metavar="N", help="evidence rows per lane unit (default: settings.k)")
    parser.add_argument("--budget", type=int, metavar="TOKENS", help="token budget (default: settings.budget_tokens)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--trace", action="store_true", help="do not record fact access")
    parser.add_argument(
        "--scopes", metavar="A,B",
        help="read as a caller holding these scopes: only rows whose every scope is listed "
        "('' = public rows only; default: every row, as the database owner)",
    )
    add_lanes_option(parser)
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    config = lanes_config(arguments)
    scopes = None if arguments.scopes is None else parse_scopes(arguments.scopes)
    with open_database(arguments.lanes) as database:
        result = find(
            database, arguments.question, k=arguments.k, budget=arguments.budget, config=config,
            trace=arguments.trace, scopes=scopes,
        )
    if arguments.json:
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        print(render(result))
    return 0


def render(result: FindResult) -> str:
    lines = []
    for candidate in result.evidence:
        source = f"  [{candidate.source_title}]" if candidate.source_title and candidate.kind == "facts" else ""
        lines.append(f"{candidate.kind:<15} {candidate.line}{source}")
    if not result.evidence:
        lines.append("(no evidence found)")
    lines.append(
        f"-- {len(result.evidence)} of {len(result.candidates)} candidates, "
        f"{result.tokens_used}/{result.budget} tokens; {len(result.covered)} covered by a fact, "
        f"{len(result.over_budget)} over budget"
    )
    return "\n".join(lines)
