"""EXPLAIN ANALYZE of the find statement for one question, with the time spent in each lane.

It runs in find's own transaction (find_transaction: the same settings, so the same generic plan)
and executes the prepared statement, as find does.

The lanes are the members of the Append that computes `ordered_context`, in the order the union
lists them (the plan's priority order); PostgreSQL runs each lane's CTEs on demand from inside that
member, so a member's actual total time is the lane's time.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.config import LanegraphConfig, load_config
from pipelines.read.compiler import UNION_CTE, CompiledStatement, bind_values, compile_find
from pipelines.read.execute import explain_as_prepared
from pipelines.read.find import checked_question, find_settings, find_transaction, settings_in_force
from pipelines.resources.database import Database
from pipelines.resources.embedder import EmbedderResource, QuestionEmbedder


@dataclass(frozen=True)
class LaneTiming:
    lane: str
    milliseconds: float
    rows: int


@dataclass(frozen=True)
class ExplainReport:
    question: str
    lanes: tuple[LaneTiming, ...]
    planning_ms: float
    execution_ms: float
    plan: dict
    settings: dict[str, str]

    def render(self) -> str:
        width = max([len(t.lane) for t in self.lanes] + [4])
        lines = [f"{'lane':<{width}}  {'ms':>9}  rows"]
        lines += [f"{t.lane:<{width}}  {t.milliseconds:>9.3f}  {t.rows}" for t in self.lanes]
        lines.append(f"planning {self.planning_ms:.3f} ms, execution {self.execution_ms:.3f} ms")
        lines.append("settings: " + ", ".join(f"{name} = {value}" for name, value in self.settings.items()))
        lines.append("")
        lines.extend(plan_lines(self.plan["Plan"]))
        return "\n".join(lines)


def explain_find(
    database: Database,
    question: str,
    *,
    config: LanegraphConfig | None = None,
    embedder: QuestionEmbedder | None = None,
) -> ExplainReport:
    config = config or load_config()
    question = checked_question(question)
    statement = compile_find(config)
    vector = (embedder or EmbedderResource.from_settings(config.pipeline.embedding).get_embedder()).embed_questions([question])[0]
    values = bind_values(config, question=question, query_vector=vector)
    with find_transaction(database, config) as connection:
        settings = settings_in_force(connection, list(find_settings(config)))
        plan = explain_as_prepared(connection, statement, values)
    return ExplainReport(
        question,
        lane_timings(plan, statement),
        float(plan.get("Planning Time", 0.0)),
        float(plan.get("Execution Time", 0.0)),
        plan,
        settings,
    )


def lane_timings(plan: dict, statement: CompiledStatement) -> tuple[LaneTiming, ...]:
    union = _find_node(plan["Plan"], lambda node: node.get("Subplan Name") == f"CTE {UNION_CTE}")
    if union is None:
        return ()
    members = union.get("Plans", []) if union.get("Node Type") == "Append" else [union]
    if len(members) != len(statement.lanes):
        return ()
    return tuple(
        LaneTiming(
            lane.name,
            float(member.get("Actual Total Time", 0.0)) * int(member.get("Actual Loops", 1) or 1),
            int(member.get("Actual Rows", 0)),
        )
        for lane, member in zip(statement.lanes, members, strict=True)
    )


def _find_node(node: dict, matches) -> dict | None:
    if matches(node):
        return node
    for child in node.get("Plans", []):
        found = _find_node(child, matches)
        if found is not None:
            return found
    return None


def plan_lines(node: dict, depth: int = 0) -> list[str]:
    """A compact text rendering of a JSON plan: one line per node, children indented."""
    label = node.get("Subplan Name") or node.get("Parent Relationship", "")
    what = node["Node Type"]
    if node.get("Index Name"):
        what += f" using {node['Index Name']}"
    if node.get("Relation Name"):
        what += f" on {node['Relation Name']}"
    if node.get("CTE Name"):
        what += f" on {node['CTE Name']}"
    timing = ""
    if "Actual Total Time" in node:
        timing = f"  ({node['Actual Total Time']:.3f} ms, {node.get('Actual Rows', 0):g} rows x {node.get('Actual Loops', 1)})"
    lines = [f"{'  ' * depth}{'[' + label + '] ' if label else ''}{what}{timing}"]
    for child in node.get("Plans", []):
        lines.extend(plan_lines(child, depth + 1))
    return lines
