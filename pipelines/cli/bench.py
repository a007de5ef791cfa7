"""`lanegraph bench`: find against its floor and against per-lane round trips, at one or more sizes."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pipelines.cli import COMMAND_HELP
from pipelines.bench.harness import (
    DEFAULT_CHUNKS,
    DEFAULT_QUERIES,
    EXPLAIN_QUERIES,
    MAX_RTT_MS,
    STORED_QUERIES,
    WARMUP_QUERIES,
    BenchOptions,
    run_benchmark,
)
from pipelines.bench.ingest_arguments import add_ingest_arguments, parse_sizes
from pipelines.bench.load import measure_load, render_load
from pipelines.bench.loader import BENCH_DATABASE
from pipelines.bench.report import render_table, write_json
from pipelines.config import data_dir, load_config
from pipelines.resources.database import resolve_database_url
from pipelines.errors import InputError

def parse_rtts(text: str) -> tuple[float, ...]:
    """`1`, `0,0.5,1,2`: round-trip times in milliseconds, comma-separated."""
    rtts = []
    for part in (p.strip() for p in text.split(",")):
        try:
            rtt = float(part)
        except ValueError:
            rtt = -1.0
        if not 0 <= rtt <= MAX_RTT_MS:
            raise argparse.ArgumentTypeError(f"{part!r} is not a round-trip time in ms (0 to {MAX_RTT_MS:g})")
        rtts.append(rtt)
    return tuple(dict.fromkeys(rtts))


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "bench",
        help=COMMAND_HELP["bench"],
        description="Synthetic corpora are bulk-loaded into their own schema per size (database "
        f"{BENCH_DATABASE} on the embedded server, or DATABASE_URL's database), bypassing the write side.",
    )
    parser.add_argument("--chunks", type=parse_sizes, action="append", metavar="N[,N...]",
                        help=f"corpus size(s) in chunks, e.g. 10k,100k (default {DEFAULT_CHUNKS}); repeatable")
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES, metavar="Q",
                        help=f"questions per size (default {DEFAULT_QUERIES}, at most {STORED_QUERIES})")
    parser.add_argument("--rounds", type=int, default=1, metavar="R", help="timed passes over the questions")
    parser.add_argument("--warmup", type=int, default=WARMUP_QUERIES, metavar="W",
                        help=f"untimed questions first, per size (default {WARMUP_QUERIES})")
    parser.add_argument("--explain-queries", type=int, default=EXPLAIN_QUERIES, metavar="E",
                        help=f"questions run under EXPLAIN ANALYZE per plan cache mode (default {EXPLAIN_QUERIES})")
    parser.add_argument("--json", type=Path, metavar="OUT",
                        help="where to write the JSON report (default <data dir>/bench/report.json)")
    parser.add_argument("--dataset", type=Path, metavar="PATH",
                        help="also measure ingest throughput per asset on this corpus (e.g. musique.json)")
    parser.add_argument("--ingest-limit", type=int, metavar="N", help="ingest only the dataset's first N passages")
    parser.add_argument("--rtt", type=parse_rtts, metavar="MS[,MS...]",
                        help="also time find against per-lane round trips with every connection through a "
                        "proxy in this process that adds MS to each round trip (e.g. 0,0.5,1,2)")
    parser.add_argument("--keep", action="store_true", help="keep each size's corpus schema after the run")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse a kept corpus of the same size and seed instead of regenerating it")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic corpus and questions")
    parser.add_argument("--lanes", type=Path, nargs="+", default=[], metavar="PATH",
                        help="other lanes.yaml files, each timed beside find on the same questions and data "
                        "as find@<file name>")
    parser.add_argument("--clients", type=int, metavar="N",
                        help="instead: find under N concurrent clients, primary alone against primary + "
                        "--replicas standbys (throughput, p50/p95, ratios); uses the first --chunks size")
    parser.add_argument("--replicas", type=int, default=1, metavar="R",
                        help="standbys beside the primary for --clients (default 1; embedded: made and removed "
                        "for the run; with DATABASE_URL: the first R of LANEGRAPH_READ_URLS)")
    parser.set_defaults(handler=run)
    kinds = parser.add_subparsers(title="other benchmarks", dest="mode", metavar="{ingest,serve}", parser_class=type(parser))
    ingest_parser = kinds.add_parser(
        "ingest",
        help="the write side on an evaluation dataset or a synthetic corpus: every asset beside the embedding "
        "step, the extraction against the parse alone, its serial share and the speedup workers would get",
        description="Ingests the dataset's passages (or the synthetic corpus's documents) into a fresh schema "
        "(database lanegraph_bench_ingest), builds the rest of the write side, then ingests one more passage "
        "into the built corpus.",
    )
    add_ingest_arguments(ingest_parser)
    ingest_parser.set_defaults(handler=run_ingest)
    serve = kinds.add_parser(
        "serve", help="find over HTTP under N concurrent clients against `lanegraph serve`, beside in-process find",
        description="Starts `lanegraph serve` on a free loopback port against the database (the demo's, "
        "DATABASE_URL's, an eval build's via LANEGRAPH_DATA_DIR) and reports throughput, p50/p95/p99 and "
        "errors, with in-process find on the same questions in the same run.",
    )
    serve.add_argument("--clients", type=int, default=16, metavar="N", help="concurrent HTTP clients (default 16)")
    serve.add_argument("--seconds", type=float, default=60.0, metavar="S", help="how long they ask (default 60)")
    serve.add_argument("--questions", type=Path, metavar="PATH",
                       help="questions, one a line (default: the demo corpus's questions)")
    serve.add_argument("--scopes", metavar="A,B",
                       help="ask as a token holding these scopes (default: an owner token), made and revoked for the run")
    serve.add_argument("--in-process-calls", type=int, default=200, metavar="N",
                       help="in-process finds timed first, one at a time (default 200)")
    serve.add_argument("--sigterm-after", type=float, metavar="S",
                       help="send the server SIGTERM S seconds into the run and count what became of the requests in flight")
    serve.add_argument("--json", type=Path, metavar="OUT", help="where to write the JSON report (default <data dir>/bench/serve.json)")
    serve.set_defaults(handler=run_serve)


def run_ingest(arguments: argparse.Namespace) -> int:
    # Imported here: it loads Dagster and the write side's definitions, which timing find never needs.
    from pipelines.bench.ingest import run as measure

    if arguments.dataset is not None and not arguments.dataset.is_file():
        raise InputError(f"lanegraph bench ingest: {arguments.dataset}: no such file")
    return measure(arguments)


def run_serve(arguments: argparse.Namespace) -> int:
    from pipelines.resources.scopes import parse_scopes
    from pipelines.serve.bench import demo_questions, measure_serve, render_serve

    if arguments.clients < 1 or arguments.seconds <= 0 or arguments.in_process_calls < 1:
        raise InputError("--clients and --in-process-calls must be at least 1, --seconds above 0")
    if arguments.sigterm_after is not None and not 0 < arguments.sigterm_after < arguments.seconds:
        raise InputError(f"--sigterm-after must lie between 0 and --seconds ({arguments.seconds:g}), got {arguments.sigterm_after:g}")
    if arguments.questions is not None:
        try:
            questions = [line.strip() for line in arguments.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"--questions {arguments.questions}: {error}") from None
        if not questions:
            raise InputError(f"--questions {arguments.questions}: no questions in it")
    else:
        questions = demo_questions()
    started = time.monotonic()

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - started:7.1f} s] {message}", file=sys.stderr, flush=True)

    report = measure_serve(
        questions, clients=arguments.clients, seconds=arguments.seconds,
        scopes=None if arguments.scopes is None else parse_scopes(arguments.scopes),
        in_process_calls=arguments.in_process_calls, progress=progress, sigterm_after=arguments.sigterm_after,
    )
    output = arguments.json or data_dir() / "bench" / "serve.json"
    write_json(report, output)
    print(render_serve(report))
    print(f"\nJSON report: {output}")
    return 0


def run(arguments: argparse.Namespace) -> int:
    sizes = tuple(size for group in (arguments.chunks or [(DEFAULT_CHUNKS,)]) for size in group)
    config = load_config()
    variants = tuple((path.stem, load_config(path)) for path in arguments.lanes)
    for (_, variant), path in zip(variants, arguments.lanes, strict=True):
        if variant.pipeline.embedding.dimension != config.pipeline.embedding.dimension:
            raise InputError(
                f"{path}: pipeline.embedding.dimension is {variant.pipeline.embedding.dimension}, but the "
                f"benchmark corpus is built for {config.pipeline.embedding.dimension} (lanes.yaml)"
            )
    if len({name for name, _ in variants}) < len(variants):
        raise InputError("--lanes: two files share a name; each is reported as find@<file name>")
    if arguments.dataset is not None and not arguments.dataset.is_file():
        raise InputError(f"--dataset {arguments.dataset}: no such file")
    try:
        options = BenchOptions(
            sizes=sizes, queries=arguments.queries, rounds=arguments.rounds, seed=arguments.seed,
            warmup_queries=arguments.warmup, explain_queries=arguments.explain_queries,
            keep=arguments.keep, reuse=arguments.reuse, dataset=arguments.dataset,
            ingest_limit=arguments.ingest_limit, variants=variants, rtts=arguments.rtt or (),
        )
    except ValueError as error:
        raise InputError(f"lanegraph bench: {error}") from None
    started = time.monotonic()

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - started:7.1f} s] {message}", file=sys.stderr, flush=True)

    if arguments.clients is not None:
        report = measure_load(
            resolve_database_url(BENCH_DATABASE), config, options,
            clients=arguments.clients, replicas=arguments.replicas, progress=progress,
        )
        rendered = render_load(report)
    else:
        report = run_benchmark(resolve_database_url(BENCH_DATABASE), config, options, progress)
        rendered = render_table(report)
    output = arguments.json or data_dir() / "bench" / ("load.json" if arguments.clients is not None else "report.json")
    write_json(report, output)
    print(rendered)
    print(f"\nJSON report: {output}")
    return 0
