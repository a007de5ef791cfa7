"""Where find's time goes: plan nodes charged to lanes, averaged over the explained questions."""

from __future__ import annotations

from pipelines.bench.planning import costliest_nodes


def scan(relation: str, milliseconds: float, rows: int) -> dict:
    return {
        "Node Type": "Seq Scan",
        "Relation Name": relation,
        "Actual Total Time": milliseconds,
        "Actual Loops": 1,
        "Actual Rows": rows,
    }


def plan(*scans: dict) -> dict:
    total = sum(s["Actual Total Time"] for s in scans)
    return {"Plan": {"Node Type": "Append", "Actual Total Time": total, "Actual Loops": 1, "Plans": list(scans)}}


def test_costliest_nodes_average_every_explained_question_not_just_the_last() -> None:
    plans = [
        plan(scan("chunk", 10.0, 100), scan("entity", 2.0, 5)),
        plan(scan("chunk", 30.0, 300), scan("entity", 40.0, 9)),
    ]
    nodes = costliest_nodes(plans, ["sources"], count=2)
    assert [(node["relation"], node["own_ms"], node["rows"]) for node in nodes] == [
        ("entity", 21.0, 7.0),
        ("chunk", 20.0, 200.0),
    ]
