"""`lanegraph bench --clients N [--replicas R]`: find under concurrent load, on the primary alone and
spread over the primary and R hot standbys, as ratios from one run.

N client threads each ask the corpus's questions through `find()` (the whole read path: statement,
dedupe, packing; the question vectors are stored with the corpus, so the embedder is not timed).
The two arrangements alternate phase by phase (primary, spread, spread, primary, ...) so that a
machine that warms up or gets busier mid-run weighs on both alike. On the embedded server the
standbys are made for the run (`bench1`, `bench2`, ...) and removed after it; with DATABASE_URL
the first R servers of LANEGRAPH_READ_URLS are used.
"""

from __future__ import annotations

from typing import Any

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from pipelines.bench.harness import BenchOptions, Progress, prepare_corpus
from pipelines.bench.loader import drop_schema, stored_queries
from pipelines.bench.synthetic import SyntheticQuery
from pipelines.bench.timing import Summary, ratio
from pipelines.config import LanegraphConfig, data_dir
from pipelines.read.find import find
from pipelines.resources.database import Database
from pipelines.resources.embedded_postgres import EmbeddedPostgres, EmbeddedStandby
from pipelines.errors import InputError
from pipelines.resources.read_servers import (
    READ_URLS_ENV,
    ReadServers,
    current_wal_lsn,
    parse_read_urls,
)

PHASES = ("primary", "spread")
REPLAY_WAIT_SECONDS = 120
BENCH_STANDBY = "bench"


class StoredVectors:
    """An embedder answering from the vectors stored with the corpus's questions."""

    def __init__(self, questions: Sequence[SyntheticQuery]) -> None:
        self._vectors = {question.text: question.vector for question in questions}
        first = next(iter(self._vectors.values()))
        self.dimension = len(first)
        self.model_id = "stored-question-vectors"

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        return np.stack([self._vectors[question] for question in questions])


@dataclass(frozen=True)
class PhaseRun:
    latencies_ms: list[float]
    seconds: float
    served_by: Counter[str]


def run_phase(
    reads: Database | ReadServers,
    config: LanegraphConfig,
    questions: Sequence[SyntheticQuery],
    clients: int,
    embedder: StoredVectors,
) -> PhaseRun:
    """Every client asks every question once (each starting at its own offset), all at once."""
    latencies: list[float] = []
    served: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def client(offset: int) -> None:
        mine: list[float] = []
        by: Counter[str] = Counter()
        start.wait()
        for step in range(len(questions)):
            question = questions[(offset + step) % len(questions)]
            began = time.perf_counter()
            result = find(reads, question.text, config=config, embedder=embedder)
            mine.append((time.perf_counter() - began) * 1000)
            by[result.served_by or "primary"] += 1
        with lock:
            latencies.extend(mine)
            served.update(by)

    threads = [threading.Thread(target=client, args=(offset * 7,)) for offset in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return PhaseRun(latencies, time.perf_counter() - began, served)


@contextmanager
def standby_urls(replicas: int, progress: Progress) -> Iterator[list[str]]:
    """R read servers: made of the embedded server for the run, or named in LANEGRAPH_READ_URLS."""
    if replicas == 0:
        yield []
        return
    if os.environ.get("DATABASE_URL", "").strip():
        named = parse_read_urls(os.environ.get(READ_URLS_ENV, "")) if os.environ.get(READ_URLS_ENV) else []
        if len(named) < replicas:
            raise InputError(
                f"--replicas {replicas} with DATABASE_URL needs that many read servers in {READ_URLS_ENV}"
            )
        yield named[:replicas]
        return
    server = EmbeddedPostgres(data_dir())
    standbys = [EmbeddedStandby(server, f"{BENCH_STANDBY}{position}") for position in range(1, replicas + 1)]
    try:
        urls = []
        for standby in standbys:
            progress(f"making standby {standby.name} (pg_basebackup)")
            urls.append(standby.start() if standby.pgdata.exists() else standby.create())
        yield urls
    finally:
        for standby in standbys:
            standby.remove()


def _figures(run: Sequence[PhaseRun]) -> dict[str, Any]:
    latencies = [ms for phase in run for ms in phase.latencies_ms]
    summary = Summary.of(latencies)
    seconds = sum(phase.seconds for phase in run)
    served: Counter[str] = Counter()
    for phase in run:
        served.update(phase.served_by)
    return {
        "calls": len(latencies), "seconds": seconds, "finds_per_second": len(latencies) / seconds,
        "p50_ms": summary.p50_ms, "p95_ms": summary.p95_ms, "served_by": dict(sorted(served.items())),
    }


def measure_load(
    server_url: str,
    config: LanegraphConfig,
    options: BenchOptions,
    *,
    clients: int,
    replicas: int,
    progress: Progress = lambda _: None,
) -> dict:
    """Throughput and latency of find with `clients` concurrent clients, primary alone against
    primary plus `replicas` standbys; `rounds` phases of each, alternating."""
    if clients < 1 or replicas < 0:
        raise InputError(f"--clients must be at least 1 and --replicas at least 0, got {clients} and {replicas}")
    chunks = options.sizes[0]
    schema, url, _ = prepare_corpus(server_url, config, chunks, options, progress)
    try:
        questions = stored_queries(url, options.queries)
        embedder = StoredVectors(questions)
        runs: dict[str, list[PhaseRun]] = {phase: [] for phase in PHASES}
        with (
            Database(url, max_size=clients) as primary,
            standby_urls(replicas, progress) as urls,
            ReadServers(primary, urls, include_primary=True, pool_size=clients) as spread,
        ):
            spread.wait_for_replay(current_wal_lsn(primary), REPLAY_WAIT_SECONDS)
            arrangements: dict[str, Database | ReadServers] = {"primary": primary, "spread": spread}
            warmup = questions[: max(1, options.warmup_queries)]
            for phase in PHASES:
                run_phase(arrangements[phase], config, warmup, clients, embedder)
            for round_number in range(options.rounds * 2):
                order = PHASES if round_number % 2 == 0 else PHASES[::-1]
                for phase in order:
                    runs[phase].append(run_phase(arrangements[phase], config, questions, clients, embedder))
                progress(f"load round {round_number + 1}/{options.rounds * 2} done")
    finally:
        if not (options.keep or options.reuse):
            drop_schema(server_url, schema)
    primary_figures, spread_figures = _figures(runs["primary"]), _figures(runs["spread"])
    return {
        "clients": clients,
        "replicas": replicas,
        "chunks": chunks,
        "questions": len(questions),
        "cpus": os.cpu_count(),
        "primary": primary_figures,
        "spread": spread_figures,
        "ratios": {
            "throughput_spread_vs_primary": ratio(spread_figures["finds_per_second"], primary_figures["finds_per_second"]),
            "p50_spread_vs_primary": ratio(spread_figures["p50_ms"], primary_figures["p50_ms"]),
            "p95_spread_vs_primary": ratio(spread_figures["p95_ms"], primary_figures["p95_ms"]),
        },
    }


def render_load(report: dict) -> str:
    lines = [
        f"lanegraph bench --clients {report['clients']} --replicas {report['replicas']}: "
        f"{report['chunks']:,} chunks, {report['questions']} questions per client per phase, {report['cpus']} CPUs",
        "  arrangement            finds/s     p50 ms     p95 ms   served by",
    ]
    for phase, label in (("primary", "primary alone"), ("spread", f"primary + {report['replicas']} standby(s)")):
        figures = report[phase]
        served = ", ".join(f"{name} {count}" for name, count in figures["served_by"].items())
        lines.append(
            f"  {label:<20} {figures['finds_per_second']:>9.1f} {figures['p50_ms']:>10.2f} "
            f"{figures['p95_ms']:>10.2f}   {served}"
        )
    ratios = report["ratios"]
    lines.append(
        f"  spread / primary: throughput {ratios['throughput_spread_vs_primary']:.2f}x, "
        f"p50 {ratios['p50_spread_vs_primary']:.2f}x, p95 {ratios['p95_spread_vs_primary']:.2f}x"
    )
    return "\n".join(lines)

