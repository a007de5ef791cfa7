"""`lanegraph bench --clients N --replicas R` at a tiny size: a well-formed report, nothing timed
asserted (timings depend on the machine)."""

from __future__ import annotations

import math
import os
import uuid

from pipelines.bench.harness import BenchOptions
from pipelines.bench.load import measure_load, render_load
from pipelines.config import data_dir, load_config
from pipelines.resources.embedded_postgres import EmbeddedPostgres
from tests import REPOSITORY


def test_load_benchmark_reports_both_arrangements_and_their_ratios(server_url: str) -> None:
    replicas = 0 if os.environ.get("DATABASE_URL") else 1
    options = BenchOptions(sizes=(120,), queries=4, warmup_queries=1, schema_prefix=f"t{uuid.uuid4().hex[:8]}_")
    report = measure_load(server_url, load_config(REPOSITORY / "lanes.yaml"), options, clients=3, replicas=replicas)

    assert (report["clients"], report["replicas"], report["questions"]) == (3, replicas, 4)
    for phase in ("primary", "spread"):
        figures = report[phase]
        # Two phases of each arrangement, every client asking every question once per phase.
        assert figures["calls"] == 2 * 3 * 4 == sum(figures["served_by"].values())
        assert all(figures[key] > 0 and math.isfinite(figures[key]) for key in ("finds_per_second", "p50_ms", "p95_ms"))
    assert report["primary"]["served_by"] == {"primary": 24}
    if replicas:
        assert set(report["spread"]["served_by"]) == {"primary", "read1"}
    assert all(value > 0 and math.isfinite(value) for value in report["ratios"].values())
    assert "spread / primary: throughput" in render_load(report)
    assert not EmbeddedPostgres(data_dir()).standbys(), "the run's standbys are removed after it"
