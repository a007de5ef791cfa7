"""`lanegraph find` and `lanegraph explain` against a planted database."""

from __future__ import annotations

import json
import re

from pipelines.cli import main
from pipelines.read.compiler import compile_find
from pipelines.read.execute import explain_statement
from tests import REPOSITORY
from pipelines.read.explain import explain_find
from pipelines.read.find import find_settings, find_transaction, settings_in_force
from pipelines.lanes_config import ANN_WINDOW
from tests.read.planting import EMBEDDER


def test_find_prints_evidence_as_json(world, monkeypatch, capsys, tmp_path):
    # The two-hop fact comes from the walk, which the shipped settings leave off.
    walking = tmp_path / "lanes.yaml"
    walking.write_text(re.sub(r"(?m)^  hops: 0\b", "  hops: 2", (REPOSITORY / "lanes.yaml").read_text()))
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


def plan_shape(node: dict) -> tuple:
    return (
        node["Node Type"], node.get("Relation Name"), node.get("Index Name"), node.get("Subplan Name"),
        tuple(plan_shape(child) for child in node.get("Plans", [])),
    )


def test_explain_reports_the_settings_and_generic_plan_find_runs_under(world, config):
    report = explain_find(world, "Who does Zorblax work with?", config=config, embedder=EMBEDDER)
    with find_transaction(world, config) as connection:
        in_find = settings_in_force(connection, list(find_settings(config)))
        generic = explain_statement(connection, compile_find(config))
    assert report.settings == in_find
    assert report.settings["hnsw.ef_search"] == str(ANN_WINDOW)
    assert report.settings["plan_cache_mode"] == "force_generic_plan"
    assert plan_shape(report.plan["Plan"]) == plan_shape(generic["Plan"])
    assert "hnsw.ef_search = 100" in report.render()
