"""`lanegraph find "question" [--k N] [--budget N] [--json] [--full] [--trace] [--scopes a,b]
[--shards URL1,URL2] [--lanes PATH]`.

By default each evidence item is one line cut to the terminal width, marked when it quotes a fact
that is no longer valid; `--full` prints the lines whole, `--json` everything."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
from collections import Counter
from collections.abc import Set
from dataclasses import asdict

from pipelines.cli import COMMAND_HELP
from pipelines.cli.options import add_lanes_option, lanes_config
from pipelines.config import LanegraphConfig
from pipelines.fusion import FuseResult
from pipelines.fusion.shards import FIND_SOURCE, ShardClient, describe_url, find_on_shards, parse_shard_urls
from pipelines.read.access import record_access_or_say
from pipelines.read.find import FindResult, find, quoting_invalid_facts
from pipelines.resources.database import open_database
from pipelines.resources.read_servers import ReadServers
from pipelines.errors import InputError, printable
from pipelines.resources.scopes import parse_scopes

NO_LONGER_VALID_MARK = "[no longer valid] "


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("find", help=COMMAND_HELP["find"])
    parser.add_argument("question", help="the question, as plain text")
    parser.add_argument("--k", type=int, metavar="N", help="evidence rows per lane unit (default: settings.k)")
    parser.add_argument("--budget", type=int, metavar="TOKENS", help="token budget (default: settings.budget_tokens)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--full", action="store_true", help="print each evidence line whole (default: cut to the terminal width)")
    parser.add_argument(
        "--trace", action="store_true",
        help="do not record fact access (recorded on the primary after the read, which runs read-only "
        "and, with LANEGRAPH_READ_URLS set, on a read server)",
    )
    parser.add_argument(
        "--scopes", metavar="A,B",
        help="read as a caller holding these scopes: only rows whose every scope is listed "
        "('' = public rows only; default: every row, as the database owner)",
    )
    parser.add_argument(
        "--shards", metavar="URL1,URL2",
        help="run the statement on each of these databases (one DATABASE_URL each, comma-separated; "
        "write a comma inside a URL as %%2C) and fuse their evidence; an unreachable shard degrades "
        "the answer (fact access is not recorded)",
    )
    add_lanes_option(parser)
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    config = lanes_config(arguments)
    scopes = None if arguments.scopes is None else parse_scopes(arguments.scopes)
    if arguments.shards is not None:
        return run_on_shards(arguments, config, scopes)
    with open_database(arguments.lanes) as database:
        reads = ReadServers.from_environment(database)
        try:
            result = find(
                reads or database, arguments.question, k=arguments.k, budget=arguments.budget, config=config,
                scopes=scopes,
            )
        finally:
            if reads is not None:
                reads.close()
        if not arguments.trace and (note := record_access_or_say(database, [result], scopes=scopes)):
            print(f"note: {note}", file=sys.stderr)
        if arguments.json:
            print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
            return 0
        invalid = quoting_invalid_facts(database, result.evidence, scopes)
    print(render(result, invalid=invalid, width=None if arguments.full else terminal_width()))
    return 0


def terminal_width() -> int:
    return shutil.get_terminal_size((120, 24)).columns


def render(
    result: FindResult, per_lane: int | None = None, *, invalid: Set[str] = frozenset(), width: int | None = None
) -> str:
    """One line per kept evidence (the first `per_lane` of each lane), cut to `width` characters
    when given, then a summary line. A line quoting a fact that is no longer valid (an evidence id
    in `invalid`) is marked."""
    lines = []
    shown: Counter[str] = Counter()
    for candidate in result.evidence:
        shown[candidate.lane] += 1
        if per_lane is not None and shown[candidate.lane] > per_lane:
            continue
        # Stored text is anyone's: a terminal escape in it must reach the screen as text.
        source = f"  [{printable(candidate.source_title)}]" if candidate.source_title and candidate.kind == "facts" else ""
        marker = NO_LONGER_VALID_MARK if candidate.evidence_id in invalid else ""
        line = f"{candidate.kind:<15} {marker}{printable(candidate.line)}{source}"
        lines.append(line if width is None or len(line) <= width else line[: max(width - 1, 20)] + "…")
    if not result.evidence:
        lines.append("(no evidence found)")
    if result.served_by:
        lines.append(f"-- read from {result.served_by}")
    lines += [f"-- degraded: {reason}" for reason in result.degraded_reason.split("; ") if reason]
    lines.append(
        f"-- {len(result.evidence)} of {len(result.candidates)} candidates, "
        f"{result.tokens_used}/{result.budget} tokens; {len(result.covered)} covered by a fact, "
        f"{len(result.over_budget)} over budget"
        + (f"; {len(invalid)} quoting a fact no longer valid" if invalid else "")
    )
    return "\n".join(lines)


def run_on_shards(arguments: argparse.Namespace, config: LanegraphConfig, scopes: tuple[str, ...] | None) -> int:
    urls = parse_shard_urls(arguments.shards)
    k = config.settings.k if arguments.k is None else arguments.k
    budget = config.settings.budget_tokens if arguments.budget is None else arguments.budget
    if k < 1 or budget < 1:
        raise InputError(f"--k and --budget must be at least 1 with --shards, got k {k} and budget {budget}")
    with ShardClient.from_urls(urls, config=config, scopes=scopes) as shards:
        result = asyncio.run(find_on_shards(shards, arguments.question, k=k, budget_tokens=budget))
    described = {name: describe_url(url) for name, url in zip(shards.shards, urls, strict=True)}
    if arguments.json:
        fused = {"question": arguments.question, "shards": described, **asdict(result), "budget": budget}
        print(json.dumps(fused, indent=2, ensure_ascii=False))
    else:
        print(render_fused(result, described, budget))
    # Degraded is still an answer; only no shard answering at all is a failure.
    failed = [name for name in described if f"find:{FIND_SOURCE}@{name} failed: " in result.degraded_reason]
    return 1 if len(failed) == len(described) else 0


def render_fused(result: FuseResult, shards: dict[str, str], budget: int) -> str:
    lines = [f"{item.source.rpartition('@')[2]:<8} {printable(item.snippet_text)}" for item in result.evidence]
    if not result.evidence:
        lines.append("(no evidence found)")
    lines += [f"-- {name}: {where}" for name, where in shards.items()]
    lines += [f"-- degraded: {reason}" for reason in result.degraded_reason.split("; ") if reason]
    lines.append(f"-- {len(result.evidence)} fused evidence, {result.budget_tokens_used}/{budget} tokens")
    return "\n".join(lines)
