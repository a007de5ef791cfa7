"""`lanegraph find` and `lanegraph explain` against a planted database."""

from __future__ import annotations

import json
import re

from pipelines.cli import main
from pipelines.config import PROJECT_ROOT
from pipelines.read.explain import explain_find
from tests.read.planting import EMBEDDER


def test_find_prints_evidence_as_json(world, monkeypatch, capsys, tmp_path):
    # The two-hop fact comes from the walk, which the shipped settings leave off.
    walking = tmp_path / "lanes.yaml"
    walking.write_text(re.sub(r"(?m)^  hops: 0\b", "  hops: 2", (PROJECT_ROOT / "lanes.yaml").read_text()))
    monkeypatch.setenv("LANEGRAPH_CONFIG", str(walking))
    monkeypatch.setenv("DATABASE_URL", world.url)
    assert main(["find", "Who does Zorblax work with?", "--json", "--trace", "--budget", "500"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["budget"] == 500 and result["tokens_used"] <= 500
    assert "Quentin trains with Marlo." in [row["line"] for row in result["evidence"]]


def test_explain_times_every_lane_in_plan_order(world, config):
    report = explain_find(world, "Which units does the user prefer in answers?", config=config, embedder=EMBEDDER)
    assert [timing.lane for timing in report.lanes] == config.plan.order
    assert all(timing.milliseconds >= 0 for timing in report.lanes)
    assert next(t for t in report.lanes if t.lane == "working_memory").rows >= 1
    rendered = report.render()
    assert "working_memory" in rendered and "Index Scan" in rendered and report.execution_ms > 0
