"""`lanegraph bench serve`: find over HTTP under N concurrent clients, beside in-process find on the
same questions, in one run, on the database `lanegraph serve` would serve.

The server is a real `lanegraph serve` process on a free loopback port; the clients are threads of
this process, each with its own keep-alive HTTP connection, asking the questions in turn until the
time is up. In-process find (the same `Service.find` the server runs, one call at a time, on a worker thread
as in the server) is timed first on the same questions. The run's token is made for the run and revoked after it.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import yaml

from pipelines.demo_corpus import demo_corpus_path
from pipelines.errors import DatabaseError
from pipelines.resources.database import open_database
from pipelines.serve.service import Service
from pipelines.serve.tokens import create_token, revoke_token

READY_TIMEOUT_SECONDS = 300.0


def demo_questions() -> list[str]:
    entries = yaml.safe_load((demo_corpus_path() / "questions.yaml").read_text(encoding="utf-8"))
    return [entry["question"] for entry in entries]


def latency_figures(latencies_ms: Sequence[float], seconds: float) -> dict[str, float | int]:
    values = np.asarray(latencies_ms, dtype=float)
    p50, p95, p99 = (float(np.percentile(values, q)) for q in (50, 95, 99)) if len(values) else (0.0, 0.0, 0.0)
    return {
        "requests": len(values), "seconds": seconds, "per_second": len(values) / seconds if seconds else 0.0,
        "p50_ms": p50, "p95_ms": p95, "p99_ms": p99,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class _Clients:
    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # When the server was sent SIGTERM (time.monotonic), if it was; what then became of the requests
    # in flight (answered or lost) and of the connections tried after it (refused).
    signalled_at: float | None = None
    shutdown: Counter[str] = field(default_factory=Counter)


def _client(url: str, secret: str, questions: Sequence[str], offset: int, deadline: float, into: _Clients) -> None:
    turns = itertools.islice(itertools.cycle(questions), offset, None)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=60) as client:
        for question in turns:
            if time.monotonic() >= deadline:
                return
            began = time.monotonic()
            started = time.perf_counter()
            try:
                response = client.post("/find", json={"question": question})
                error = "" if response.status_code == 200 else f"HTTP {response.status_code}"
                transport_failed = False
            except httpx.HTTPError as failure:
                error, transport_failed = type(failure).__name__, True
            elapsed = (time.perf_counter() - started) * 1000
            with into.lock:
                signalled_at = into.signalled_at
                if signalled_at is not None and began >= signalled_at and transport_failed:
                    # The server is going away: a request begun after the signal is not its to take.
                    into.shutdown["refused after the signal"] += 1
                    return
                if signalled_at is not None and began < signalled_at:
                    into.shutdown["in flight, lost" if transport_failed else "in flight, answered"] += 1
                if error:
                    into.errors[error] += 1
                else:
                    into.latencies_ms.append(elapsed)


def _wait_ready(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise DatabaseError(f"lanegraph serve exited with status {server.returncode} before it was ready")
        try:
            if httpx.get(f"{url}/ready", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise DatabaseError(f"lanegraph serve was not ready within {READY_TIMEOUT_SECONDS:g} s")


def measure_serve(
    questions: Sequence[str], *, clients: int, seconds: float, scopes: Sequence[str] | None,
    in_process_calls: int, progress: Callable[[str], None], sigterm_after: float | None = None,
) -> dict[str, Any]:
    """With `sigterm_after`, the server is sent SIGTERM that many seconds into the clients' run: the
    report counts the requests in flight then (each must be answered) and the connections refused
    after it, and the clients stop as the server goes."""
    with open_database() as database:
        token, secret = create_token(database, "lanegraph bench serve", scopes)
    try:
        progress(f"in-process find: {in_process_calls} calls, one at a time")
        service = Service.open()
        try:
            caller = service.caller(secret)
            assert caller is not None

            def one_at_a_time() -> list[float]:
                timings = []
                for question in itertools.islice(itertools.cycle(questions), in_process_calls):
                    began = time.perf_counter()
                    service.find(caller, question)
                    timings.append((time.perf_counter() - began) * 1000)
                return timings

            # On a worker thread, as the server runs find: on the main thread torch's OpenMP team
            # spins for cores other processes hold, and one question embedding measured 0.3-1.4 s
            # there against 10 ms on a worker thread on a loaded two-core machine.
            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=1) as worker:
                in_process = worker.submit(one_at_a_time).result()
            in_process_seconds = time.monotonic() - started
        finally:
            service.close()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        progress(f"starting lanegraph serve on {url} (pool {clients} connections)")
        server = subprocess.Popen(
            [sys.executable, "-m", "pipelines.cli", "serve", "--port", str(port), "--pool-size", str(clients)],
            env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            _wait_ready(url, server)
            progress(f"{clients} clients asking find over HTTP for {seconds:g} s")
            results = _Clients()
            deadline = time.monotonic() + seconds
            started = time.monotonic()
            threads = [
                threading.Thread(target=_client, args=(url, secret, questions, number, deadline, results))
                for number in range(clients)
            ]
            for thread in threads:
                thread.start()
            if sigterm_after is not None:
                time.sleep(sigterm_after)
                progress(f"SIGTERM to the server, {sigterm_after:g} s in")
                with results.lock:
                    results.signalled_at = time.monotonic()
                server.terminate()
            for thread in threads:
                thread.join()
            http_seconds = time.monotonic() - started
        finally:
            server.terminate()
            server.wait(timeout=60)
    finally:
        with open_database() as database:
            revoke_token(database, token.id)
    return {
        "clients": clients,
        "questions": len(questions),
        "scopes": None if scopes is None else list(scopes),
        "http": {**latency_figures(results.latencies_ms, http_seconds), "errors": dict(results.errors)},
        "in_process": latency_figures(in_process, in_process_seconds),
        "sigterm": None if sigterm_after is None else {"after_seconds": sigterm_after, **results.shutdown},
    }


def render_serve(report: dict[str, Any]) -> str:
    http, local = report["http"], report["in_process"]
    lines = [
        f"{'':<28}{'requests':>10}{'per s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'errors':>8}",
        f"{'HTTP, ' + str(report['clients']) + ' clients':<28}{http['requests']:>10}{http['per_second']:>9.1f}"
        f"{http['p50_ms']:>9.1f}{http['p95_ms']:>9.1f}{http['p99_ms']:>9.1f}{sum(http['errors'].values()):>8}",
        f"{'in-process, 1 at a time':<28}{local['requests']:>10}{local['per_second']:>9.1f}"
        f"{local['p50_ms']:>9.1f}{local['p95_ms']:>9.1f}{local['p99_ms']:>9.1f}{'':>8}",
        f"HTTP p50 - in-process p50: {http['p50_ms'] - local['p50_ms']:+.1f} ms "
        f"({report['questions']} questions)",
    ]
    lines += [f"errors: {kind} x{count}" for kind, count in http["errors"].items()]
    if (shutdown := report.get("sigterm")) is not None:
        lines.append(
            f"SIGTERM {shutdown['after_seconds']:g} s in: {shutdown.get('in flight, answered', 0)} requests in flight "
            f"answered, {shutdown.get('in flight, lost', 0)} lost; {shutdown.get('refused after the signal', 0)} "
            "refused after it"
        )
    return "\n".join(lines)
