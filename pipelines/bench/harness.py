"""`run_benchmark`: the find statement against its floor, against per-lane round trips, across sizes.

For each corpus size (its own schema, see `loader`): the compiled find statement, the same lanes
compiled one statement each (the shape other systems have: one round trip per retrieval, results
fused in the application), every floor probe and an empty round trip all run on every question,
interleaved (`timing.interleaved`), as the owner and under the generic plan, the way `find` runs
without scopes; the statement also runs under the other plan cache modes and as a caller confined
by row-level security, to show what those cost. Then the server's own account (EXPLAIN ANALYZE EXECUTE of
SQL-level prepared statements) gives planning against execution under each plan cache mode and the
time each lane spends inside the statement. Latencies are client-side wall times of one prepared
execution with the question vector precomputed: the embedder is measured by the ingest benchmark.
"""

from __future__ import annotations

import math
import os
import subprocess
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psycopg

from pipelines.bench import planning
from pipelines.bench.floor import EMPTY_ROUND_TRIP, FloorProbe, floor_probes
from pipelines.bench.latency_proxy import LatencyProxy
from pipelines.bench.loader import (
    LoadResult,
    bench_schema,
    drop_schema,
    load_corpus,
    recorded_load,
    recreate_schema,
    schema_url,
    store_queries,
    stored_queries,
)
from pipelines.bench.recall import RECALL_QUESTIONS, dense_recall
from pipelines.bench.synthetic import CorpusShape, SyntheticCorpus
from pipelines.bench.timing import Summary, growth_per_decade, interleaved, ratio, rotation
from pipelines.config import LanegraphConfig
from pipelines.read.compiler import CompiledStatement, bind_values, compile_find
from pipelines.read.execute import run_statement
from pipelines.read.explain import lane_timings
from pipelines.read.find import enter_find_settings, find_transaction
from pipelines.resources.database import Database, prepare_database
from pipelines.shipped import SHIPPED_ROOT
from pipelines.resources.rows import one_row

DEFAULT_CHUNKS = 2_000
DEFAULT_QUERIES = 100
# Questions stored with a corpus, so a reused corpus can serve any --queries up to this.
STORED_QUERIES = 1_000
# Enough for auto plan caching to settle (five custom plans) and the caches to fill.
WARMUP_QUERIES = 10
EXPLAIN_QUERIES = 20
CONFINED_QUERIES = 10
CONFINED_WARMUP_QUERIES = 2
LANE_EXPLAIN_QUERIES = 5
COSTLIEST_NODES = 12
# Past cross-region round trips nothing of this comparison changes but the waiting.
MAX_RTT_MS = 100.0
SERVER_SETTINGS = (
    "server_version", "shared_buffers", "work_mem", "effective_cache_size", "jit",
    "max_parallel_workers_per_gather", "max_parallel_maintenance_workers", "random_page_cost",
    "hnsw.ef_search", "hnsw.iterative_scan", "plan_cache_mode",
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BenchOptions:
    sizes: tuple[int, ...] = (DEFAULT_CHUNKS,)
    queries: int = DEFAULT_QUERIES
    rounds: int = 1
    warmup_queries: int = WARMUP_QUERIES
    explain_queries: int = EXPLAIN_QUERIES
    seed: int = 0
    # Keep each size's schema after the run; with `reuse`, a kept corpus of the same shape is used.
    keep: bool = False
    reuse: bool = False
    dataset: Path | None = None
    ingest_limit: int | None = None
    schema_prefix: str = field(default="")
    # Other lanes.yaml settings (name, config), each timed as `find@<name>` beside find.
    variants: tuple[tuple[str, LanegraphConfig], ...] = ()
    # Round-trip times (ms) of a network hop each arm is also timed across (`latency_proxy`).
    rtts: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.sizes or any(size < 8 for size in self.sizes):
            raise ValueError("every corpus size must be at least 8 chunks")
        if self.queries < 1 or self.queries > STORED_QUERIES:
            raise ValueError(f"--queries must be between 1 and {STORED_QUERIES}")
        if any(not 0 <= rtt <= MAX_RTT_MS for rtt in self.rtts):
            raise ValueError(f"every --rtt must be between 0 and {MAX_RTT_MS:g} ms")
        if self.rounds < 1 or self.warmup_queries < 0 or self.explain_queries < 1:
            raise ValueError("rounds and EXPLAIN questions must be at least 1, warm-up questions at least 0")


@dataclass(frozen=True)
class BenchStatements:
    """Everything timed: the find statement, its lanes one statement each, the floor probes."""

    find: CompiledStatement
    lanes: tuple[tuple[str, CompiledStatement], ...]
    probes: tuple[FloorProbe, ...]

    @classmethod
    def of(cls, config: LanegraphConfig) -> BenchStatements:
        find = compile_find(config)
        return cls(find, tuple((lane.name, compile_find(single_lane(config, lane.name))) for lane in find.lanes),
                   floor_probes(find, config.pipeline.embedding.dimension))


@dataclass(frozen=True)
class VariantRun:
    """Another lanes.yaml's find statement, with its settings bound for each question's text."""

    name: str
    config: LanegraphConfig
    statement: CompiledStatement
    values_by_question: Mapping[str, Mapping[str, object]]


def single_lane(config: LanegraphConfig, lane: str) -> LanegraphConfig:
    """`config` with a plan of one lane: that lane's statement exactly as the full plan builds it."""
    return config.model_copy(update={"plan": config.plan.model_copy(update={"order": [lane]})})


def run_round_trips(
    connection: psycopg.Connection, lanes: Sequence[tuple[str, CompiledStatement]], values: Mapping[str, object]
) -> tuple[list[tuple], dict[str, float]]:
    """One round trip per lane, fused in Python as the single statement fuses them in SQL: each
    lane's rows come sorted by (ordering, evidence_id), so lanes concatenated in priority order are
    sorted by (priority, ordering, evidence_id). Returns the rows and each lane's milliseconds."""
    rows: list[tuple] = []
    lane_ms: dict[str, float] = {}
    for name, statement in lanes:
        started = time.perf_counter_ns()
        rows.extend(run_statement(connection, statement, values))
        lane_ms[name] = (time.perf_counter_ns() - started) / 1e6
    return rows, lane_ms


def run_benchmark(
    server_url: str, config: LanegraphConfig, options: BenchOptions, progress: Progress = lambda _: None
) -> dict:
    """Benchmark every size in `options.sizes` on the server at `server_url`; return the report.

    The top-level figures are those of the largest size; `sizes` holds every size's report and
    `scaling` the growth per 10x between consecutive sizes."""
    reports = [bench_size(server_url, config, chunks, options, progress) for chunks in sorted(set(options.sizes))]
    report = {**reports[-1], "sizes": reports, "scaling": scaling(reports), "code": code_version()}
    if options.dataset is not None:
        # Imported here: it loads Dagster and the write-side definitions, which timing find never
        # needs, and Dagster warns about beta parameters while they load.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pipelines.bench.ingest import benchmark_passages, measure_ingest

        progress(f"ingest benchmark on {options.dataset}")
        report["ingest"] = measure_ingest(
            options.dataset.name, benchmark_passages(options.dataset, options.ingest_limit), progress=progress
        )
    return report


def prepare_corpus(
    server_url: str, config: LanegraphConfig, chunks: int, options: BenchOptions, progress: Progress
) -> tuple[str, str, LoadResult]:
    """A synthetic corpus of `chunks` chunks in its own schema, reused when `options.reuse` finds
    one of the same shape: returns the schema, its URL and what the load did."""
    dimension = config.pipeline.embedding.dimension
    shape = CorpusShape(chunks, dimension, options.seed)
    schema = options.schema_prefix + bench_schema(chunks)
    url = schema_url(server_url, schema)
    load = recorded_load(url, shape.as_dict()) if options.reuse else None
    if load is not None and len(stored_queries(url, options.queries)) >= options.queries:
        progress(f"{chunks} chunks: reusing the corpus in schema {schema}")
        prepare_database(url, dimension)
        return schema, url, load
    progress(f"{chunks} chunks: generating and loading a synthetic corpus into schema {schema}")
    url = recreate_schema(server_url, schema, dimension)
    corpus = SyntheticCorpus(shape)
    raptor = config.pipeline.raptor
    load = load_corpus(url, corpus, raptor_max_levels=raptor.max_levels, raptor_root_count=raptor.root_count)
    store_queries(url, corpus.queries(STORED_QUERIES))
    return schema, url, load


def bench_size(server_url: str, config: LanegraphConfig, chunks: int, options: BenchOptions, progress: Progress) -> dict:
    schema, url, load = prepare_corpus(server_url, config, chunks, options, progress)
    questions = stored_queries(url, options.queries)
    try:
        statements = BenchStatements.of(config)
        values = [bind_values(config, question=q.text, query_vector=q.vector) for q in questions]
        variants = [
            VariantRun(name, variant, compile_find(variant), {
                q.text: bind_values(variant, question=q.text, query_vector=q.vector) for q in questions
            })
            for name, variant in options.variants
        ]
        with Database(url, max_size=5 + len(statements.lanes) + len(variants)) as database:
            progress(f"{chunks} chunks: timing find, round trips and floor probes on {len(values)} questions")
            latency = measure_latency(database, config, statements, values, options, variants)
            progress(f"{chunks} chunks: planning and per-lane EXPLAIN ANALYZE")
            server = measure_server_side(database, config, statements, values[: options.explain_queries])
            progress(f"{chunks} chunks: dense rankings against exact ones on {min(len(values), RECALL_QUESTIONS)} questions")
            recall = dense_recall(database, config, statements.find, values)
            with database.connection() as connection:
                settings = server_settings(connection)
        network = [
            measure_across_hop(url, config, statements, values, rtt, options, progress) for rtt in options.rtts
        ]
    finally:
        if not (options.keep or options.reuse):
            drop_schema(server_url, schema)
    return size_report(
        chunks, len(questions), load, latency, server, recall, {**settings, "plan": config.plan.model_dump()}, network
    )


@dataclass
class LatencyResult:
    samples: dict[str, list[float]]
    lane_samples: dict[str, list[float]]
    probes: tuple[str, ...]
    roundtrips_match_single: bool
    generic_matches_custom: bool
    variants: tuple[str, ...] = ()


def measure_latency(
    database: Database,
    config: LanegraphConfig,
    statements: BenchStatements,
    values: Sequence[Mapping[str, object]],
    options: BenchOptions,
    variants: Sequence[VariantRun] = (),
) -> LatencyResult:
    """Every timed statement on every question, interleaved, as the owner (like `find` without scopes).

    `find` runs exactly as `find()` runs it: prepared, under the generic plan it forces. The
    lanes' own statements run under the same rule, so the comparison is of shapes, not of plan
    policies; `find_auto` and `find_custom` show the other policies. The floor probes keep
    PostgreSQL's default (auto), which re-plans them with the values whenever that is cheaper:
    the floor is the best each index can do. They search each HNSW graph as wide as find does
    (find's `hnsw.ef_search`): a narrower search is cheaper only because it is less exact, so it
    bounds nothing find could do at find's recall. `find_confined` is `find` as a caller confined by
    row-level security, on one connection held throughout; `find_confined_per_call` opens the
    confined block per call, as `find(..., scopes=...)` does. Each other lanes.yaml of
    `BenchOptions.variants` runs as find does, with its own settings, on a connection of its own,
    as `find@<name>`."""
    lane_samples: dict[str, list[float]] = {name: [] for name, _ in statements.lanes}
    with (
        database.connection() as main,
        database.connection() as probes,
        database.connection() as auto,
        database.connection() as custom,
        database.connection([]) as confined,
        ExitStack() as stack,
        ThreadPoolExecutor(len(statements.lanes)) as workers,
    ):
        lane_connections = [stack.enter_context(database.connection()) for _ in statements.lanes]
        variant_connections = [stack.enter_context(database.connection()) for _ in variants]
        for connection in (main, probes, confined, auto, custom, *lane_connections):
            enter_find_settings(connection, config)
        for connection, variant in zip(variant_connections, variants, strict=True):
            enter_find_settings(connection, variant.config)
        # The other plan cache modes differ from find in that alone.
        planning.set_plan_cache_mode(probes, "auto")
        planning.set_plan_cache_mode(auto, "auto")
        planning.set_plan_cache_mode(custom, "force_custom_plan")

        def round_trips(query_values: Mapping[str, object]) -> None:
            _, lane_ms = run_round_trips(main, statements.lanes, query_values)
            for name, ms in lane_ms.items():
                lane_samples[name].append(ms)

        def concurrent_round_trips(query_values: Mapping[str, object]) -> list[tuple]:
            """The lanes at once, one connection each, as an asyncio client fans them out."""
            pending = [
                workers.submit(run_statement, connection, statement, query_values)
                for connection, (_, statement) in zip(lane_connections, statements.lanes, strict=True)
            ]
            return [row for future in pending for row in future.result()]

        timed: dict[str, Callable[[Mapping[str, object]], object]] = {
            "find": lambda v: run_statement(main, statements.find, v),
            "roundtrips": round_trips,
            "roundtrips_concurrent": concurrent_round_trips,
            "find_auto": lambda v: run_statement(auto, statements.find, v),
            "find_custom": lambda v: run_statement(custom, statements.find, v),
            "empty_round_trip": lambda v: run_statement(probes, EMPTY_ROUND_TRIP, {}),
        }
        def floor(probe: FloorProbe) -> Callable[[Mapping[str, object]], object]:
            return lambda v: run_statement(probes, probe.statement, probe.values(v))

        def find_variant(connection: psycopg.Connection, variant: VariantRun) -> Callable[[Mapping[str, object]], object]:
            return lambda v: run_statement(connection, variant.statement, variant.values_by_question[str(v["question"])])

        for probe in statements.probes:
            timed[f"floor_{probe.name}"] = floor(probe)
        for connection, variant in zip(variant_connections, variants, strict=True):
            timed[f"find@{variant.name}"] = find_variant(connection, variant)
        samples = interleaved(timed, values, rounds=options.rounds, warmup_queries=options.warmup_queries)
        def confined_per_call(query_values: Mapping[str, object]) -> list[tuple]:
            """find as a confined caller runs it (`lanegraph find --scopes`): a confined block per
            call, so whatever opening one costs is timed with the statement."""
            with find_transaction(database, config, []) as connection:
                return run_statement(connection, statements.find, query_values)

        # Under row-level security the statement can cost many times more, so it is timed against
        # the owner's on fewer questions, in a group of its own: on one held confined connection
        # (the statement alone) and per call (what a caller waits for).
        confined_group = interleaved(
            {
                "find_owner": lambda v: run_statement(main, statements.find, v),
                "find_confined": lambda v: run_statement(confined, statements.find, v),
                "find_confined_per_call": confined_per_call,
            },
            values[:CONFINED_QUERIES],
            warmup_queries=CONFINED_WARMUP_QUERIES,
        )
        samples.update(confined_group)
        warmup_calls = min(options.warmup_queries, len(values))
        lane_samples = {name: ms[warmup_calls:] for name, ms in lane_samples.items()}
        first = values[0]
        single_rows = run_statement(main, statements.find, first)
        roundtrip_rows, _ = run_round_trips(main, statements.lanes, first)
        concurrent_rows = concurrent_round_trips(first)
        custom_rows = run_statement(custom, statements.find, first)
        for connection in (main, probes, auto, custom, *lane_connections, *variant_connections):
            connection.rollback()
    return LatencyResult(
        samples, lane_samples, tuple(p.name for p in statements.probes),
        roundtrips_match_single=roundtrip_rows == single_rows == concurrent_rows,
        generic_matches_custom=single_rows == custom_rows,
        variants=tuple(variant.name for variant in variants),
    )


ROUND_TRIP_ARMS = ("find", "roundtrips", "roundtrips_concurrent", "empty_round_trip")


def measure_across_hop(
    url: str,
    config: LanegraphConfig,
    statements: BenchStatements,
    values: Sequence[Mapping[str, object]],
    rtt_ms: float,
    options: BenchOptions,
    progress: Progress,
) -> dict:
    """The single statement against per-lane round trips (one after another, and all at once on a
    connection each) with every connection through a proxy that adds `rtt_ms` to each round trip
    (0: through the proxy, nothing added), interleaved as `measure_latency` times them."""
    progress(f"find and per-lane round trips across a {rtt_ms:g} ms round-trip hop")
    with (
        LatencyProxy(url, rtt_ms) as proxy,
        Database(proxy.url, max_size=1 + len(statements.lanes)) as database,
        database.connection() as main,
        ExitStack() as stack,
        ThreadPoolExecutor(len(statements.lanes)) as workers,
    ):
        lane_connections = [stack.enter_context(database.connection()) for _ in statements.lanes]
        for connection in (main, *lane_connections):
            enter_find_settings(connection, config)

        def concurrent_round_trips(query_values: Mapping[str, object]) -> list[tuple]:
            pending = [
                workers.submit(run_statement, connection, statement, query_values)
                for connection, (_, statement) in zip(lane_connections, statements.lanes, strict=True)
            ]
            return [row for future in pending for row in future.result()]

        arms: dict[str, Callable[[Mapping[str, object]], object]] = {
            "find": lambda v: run_statement(main, statements.find, v),
            "roundtrips": lambda v: run_round_trips(main, statements.lanes, v),
            "roundtrips_concurrent": concurrent_round_trips,
            "empty_round_trip": lambda v: run_statement(main, EMPTY_ROUND_TRIP, {}),
        }
        samples = interleaved(arms, values, rounds=options.rounds, warmup_queries=options.warmup_queries)
        for connection in (main, *lane_connections):
            connection.rollback()
    return hop_report(rtt_ms, {name: Summary.of(samples[name]) for name in ROUND_TRIP_ARMS})


def hop_report(rtt_ms: float, summaries: Mapping[str, Summary]) -> dict:
    find, sequential, concurrent = (summaries[arm] for arm in ROUND_TRIP_ARMS[:3])
    return {
        "rtt_ms": rtt_ms,
        **{f"{arm}_p50_ms": summaries[arm].p50_ms for arm in ROUND_TRIP_ARMS},
        **{f"{arm}_p95_ms": summaries[arm].p95_ms for arm in ROUND_TRIP_ARMS},
        "single_vs_roundtrips": ratio(find.p50_ms, sequential.p50_ms),
        "single_vs_concurrent_roundtrips": ratio(find.p50_ms, concurrent.p50_ms),
        "single_vs_roundtrips_p95": ratio(find.p95_ms, sequential.p95_ms),
        "single_vs_concurrent_roundtrips_p95": ratio(find.p95_ms, concurrent.p95_ms),
    }


@dataclass
class ServerSideResult:
    # plan_cache_mode -> one (planning, execution) per question; `roundtrips` sums the lanes'.
    find: dict[str, list[planning.ServerTiming]]
    roundtrips: dict[str, list[planning.ServerTiming]]
    auto_generic_share: float
    lane_ms: dict[str, list[float]]
    costliest: list[dict]


def measure_server_side(
    database: Database, config: LanegraphConfig, statements: BenchStatements, values: Sequence[Mapping[str, object]]
) -> ServerSideResult:
    """Planning and execution as the server reports them, per plan cache mode, for the find
    statement and for the lanes' statements summed; then where the time goes inside find."""
    find_name = "bench_find"
    prepared_lanes = [(f"bench_lane_{i}", statement) for i, (_, statement) in enumerate(statements.lanes)]
    find_timings: dict[str, list[planning.ServerTiming]] = {mode: [] for mode in planning.PLAN_CACHE_MODES}
    roundtrip_timings: dict[str, list[planning.ServerTiming]] = {mode: [] for mode in planning.PLAN_CACHE_MODES}
    auto_generic = 0
    with database.connection() as connection:
        enter_find_settings(connection, config)
        planning.prepare(connection, find_name, statements.find)
        for name, statement in prepared_lanes:
            planning.prepare(connection, name, statement)
        # Let auto mode see its five custom plans and settle before anything is recorded.
        for query_values in values[: planning.AUTO_CUSTOM_PLANS_BEFORE_GENERIC + 1]:
            planning.explain_execute(connection, find_name, statements.find, query_values)
            for name, statement in prepared_lanes:
                planning.explain_execute(connection, name, statement, query_values)
        for step, query_values in enumerate(values):
            for mode in rotation(planning.PLAN_CACHE_MODES, step):
                planning.set_plan_cache_mode(connection, mode)
                generic_before, _ = planning.plans_chosen(connection, find_name)
                plan = planning.explain_execute(connection, find_name, statements.find, query_values)
                if mode == "auto":
                    auto_generic += planning.plans_chosen(connection, find_name)[0] - generic_before
                find_timings[mode].append(planning.server_timing(plan))
                per_lane = [
                    planning.server_timing(planning.explain_execute(connection, name, statement, query_values))
                    for name, statement in prepared_lanes
                ]
                roundtrip_timings[mode].append(
                    planning.ServerTiming(sum(t.planning_ms for t in per_lane), sum(t.execution_ms for t in per_lane))
                )
        # Where the time goes, under the plan find runs.
        planning.set_plan_cache_mode(connection, "force_generic_plan")
        lane_ms: dict[str, list[float]] = {name: [] for name, _ in statements.lanes}
        plans = []
        for query_values in values[:LANE_EXPLAIN_QUERIES]:
            plan = planning.explain_execute(connection, find_name, statements.find, query_values, timing=True)
            for timing in lane_timings(plan, statements.find):
                lane_ms[timing.lane].append(timing.milliseconds)
            plans.append(plan)
        costliest = planning.costliest_nodes(plans, list(lane_ms), COSTLIEST_NODES) if plans else []
        for name, _ in prepared_lanes:
            planning.deallocate(connection, name)
        planning.deallocate(connection, find_name)
        connection.rollback()
    return ServerSideResult(
        find_timings, roundtrip_timings,
        auto_generic_share=ratio(auto_generic, len(find_timings["auto"])),
        lane_ms=lane_ms, costliest=costliest,
    )


def _median(values: Sequence[float]) -> float:
    return float(np.median(values)) if values else math.nan


def floor_per_question(samples: Mapping[str, list[float]], probes: Sequence[str]) -> list[float]:
    """Per question: every probe's latency summed, less one empty round trip per probe but one.

    Each probe pays a client round trip the single statement pays once; what is left is the
    server-side work of every index access plus one round trip."""
    empty = samples["empty_round_trip"]
    floors = []
    for question, round_trip in enumerate(empty):
        probe_ms = [samples[f"floor_{name}"][question] for name in probes]
        floors.append(max(sum(probe_ms) - (len(probe_ms) - 1) * round_trip, max(probe_ms)))
    return floors


def _mode_report(timings: Sequence[planning.ServerTiming]) -> dict[str, float]:
    return {
        "planning_p50_ms": _median([t.planning_ms for t in timings]),
        "execution_p50_ms": _median([t.execution_ms for t in timings]),
        "planning_share": _median([ratio(t.planning_ms, t.execution_ms) for t in timings]),
    }


def size_report(
    chunks: int, questions: int, load: LoadResult, latency: LatencyResult, server: ServerSideResult,
    recall: dict, environment: dict, network: Sequence[dict] = (),
) -> dict:
    summaries = {name: Summary.of(samples) for name, samples in latency.samples.items()}
    find = summaries["find"]
    roundtrips = summaries["roundtrips"]
    floor = Summary.of(floor_per_question(latency.samples, latency.probes))
    empty = summaries["empty_round_trip"]
    lane_server = {lane: _median(ms) for lane, ms in server.lane_ms.items()}
    hnsw_builds = [build for build in load.index_builds if build.method == "hnsw"]
    return {
        "chunks": chunks,
        "questions": questions,
        "find_p50_ms": find.p50_ms,
        "find_p95_ms": find.p95_ms,
        "floor_p50_ms": floor.p50_ms,
        "floor_p95_ms": floor.p95_ms,
        "find_vs_floor": ratio(find.p50_ms, floor.p50_ms),
        "find_p95_vs_floor": ratio(find.p95_ms, floor.p95_ms),
        "roundtrips_p50_ms": roundtrips.p50_ms,
        "roundtrips_p95_ms": roundtrips.p95_ms,
        "single_vs_roundtrips": ratio(find.p50_ms, roundtrips.p50_ms),
        "single_vs_roundtrips_p95": ratio(find.p95_ms, roundtrips.p95_ms),
        "concurrent_roundtrips_p50_ms": summaries["roundtrips_concurrent"].p50_ms,
        "single_vs_concurrent_roundtrips": ratio(find.p50_ms, summaries["roundtrips_concurrent"].p50_ms),
        # find forces the generic plan, so its planning is the generic plan's.
        "planning_share": _mode_report(server.find["force_generic_plan"])["planning_share"],
        "planning_share_auto": _mode_report(server.find["auto"])["planning_share"],
        "generic_p50_ms": find.p50_ms,
        "custom_p50_ms": summaries["find_custom"].p50_ms,
        "auto_p50_ms": summaries["find_auto"].p50_ms,
        "generic_vs_custom": ratio(find.p50_ms, summaries["find_custom"].p50_ms),
        "confined_p50_ms": summaries["find_confined"].p50_ms,
        "confined_vs_owner": ratio(summaries["find_confined"].p50_ms, summaries["find_owner"].p50_ms),
        "confined_per_call_p50_ms": summaries["find_confined_per_call"].p50_ms,
        "confined_per_call_vs_owner": ratio(
            summaries["find_confined_per_call"].p50_ms, summaries["find_owner"].p50_ms
        ),
        "empty_round_trip_p50_ms": empty.p50_ms,
        # BM25 against an HNSW window: once the one slow index of the floor (absent without the sources lane).
        "bm25_vs_dense_chunk": ratio(*(
            summaries[f"floor_{probe}"].p50_ms if f"floor_{probe}" in summaries else math.nan
            for probe in ("bm25", "dense_chunk")
        )),
        "variants": {
            name: {
                "p50_ms": summaries[f"find@{name}"].p50_ms,
                "p95_ms": summaries[f"find@{name}"].p95_ms,
                "vs_find": ratio(summaries[f"find@{name}"].p50_ms, find.p50_ms),
            }
            for name in latency.variants
        },
        # Beside the floor: an HNSW probe is only as fast as it is approximate (pipelines/bench/recall.py).
        "dense_recall": recall,
        "floor": {
            name: {
                "p50_ms": summaries[f"floor_{name}"].p50_ms,
                "server_p50_ms": max(summaries[f"floor_{name}"].p50_ms - empty.p50_ms, 0.0),
            }
            for name in latency.probes
        },
        "lanes": {
            lane: {
                "roundtrip_p50_ms": Summary.of(ms).p50_ms,
                "in_statement_ms": lane_server.get(lane, math.nan),
            }
            for lane, ms in latency.lane_samples.items()
        },
        "costliest_nodes": server.costliest,
        # The round-trip arms again, each connection across a latency-injecting hop (`--rtt`).
        "network": list(network),
        "planning": {
            "find": {mode: _mode_report(timings) for mode, timings in server.find.items()},
            "roundtrips": {mode: _mode_report(timings) for mode, timings in server.roundtrips.items()},
            "auto_generic_share": server.auto_generic_share,
        },
        "checks": {
            "roundtrips_match_single": latency.roundtrips_match_single,
            "generic_matches_custom": latency.generic_matches_custom,
        },
        "latency": {name: summary.as_dict() for name, summary in summaries.items()},
        "corpus": {"shape": load.shape, "rows": load.table_rows},
        "load_seconds": load.load_seconds,
        "index_build_seconds": {build.name: build.seconds for build in load.index_builds},
        "hnsw_build_seconds": sum(build.seconds for build in hnsw_builds),
        "index_build_total_seconds": sum(build.seconds for build in load.index_builds),
        "environment": environment,
    }


def scaling(reports: Sequence[dict]) -> list[dict]:
    """Growth between consecutive sizes, for latency, load and index build time: as measured (the
    larger size's figure over the smaller's) and per 10x corpus, so steps of any width compare."""
    steps = []
    for smaller, larger in zip(reports, reports[1:], strict=False):
        def growth(key: str, smaller=smaller, larger=larger) -> float:
            return growth_per_decade(smaller["chunks"], smaller[key], larger["chunks"], larger[key])

        def measured(key: str, smaller=smaller, larger=larger) -> float:
            return ratio(larger[key], smaller[key])

        steps.append({
            "from_chunks": smaller["chunks"],
            "to_chunks": larger["chunks"],
            "find_p50_growth": measured("find_p50_ms"),
            "find_p95_growth": measured("find_p95_ms"),
            "floor_p50_growth": measured("floor_p50_ms"),
            "load_growth": measured("load_seconds"),
            "index_build_growth": measured("index_build_total_seconds"),
            "find_p50_growth_per_10x": growth("find_p50_ms"),
            "find_p95_growth_per_10x": growth("find_p95_ms"),
            "floor_p50_growth_per_10x": growth("floor_p50_ms"),
            "roundtrips_p50_growth_per_10x": growth("roundtrips_p50_ms"),
            "hnsw_build_growth_per_10x": growth("hnsw_build_seconds"),
        })
    return steps


def server_settings(connection: psycopg.Connection) -> dict[str, object]:
    """The settings latency depends on, as find (run as the owner) sees them."""
    # pgvector's settings exist only once the library is loaded in this session.
    connection.execute("SELECT '[1]'::vector")
    settings: dict[str, object] = {
        name: one_row(connection.execute("SELECT current_setting(%s, true)", (name,)), f"setting {name}")[0]
        for name in SERVER_SETTINGS
    }
    vector = connection.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    settings["pgvector"] = vector[0] if vector else None
    settings["cpu_count"] = os.cpu_count()
    return settings


def code_version() -> dict[str, object]:
    """The commit that was measured, and how many tracked files differed from it."""
    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", "-C", str(SHIPPED_ROOT), *arguments], capture_output=True, text=True, check=True
        ).stdout

    try:
        return {
            "commit": git("rev-parse", "HEAD").strip(),
            "modified_files": len(git("status", "--porcelain", "--untracked-files=no").splitlines()),
        }
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "modified_files": None}
