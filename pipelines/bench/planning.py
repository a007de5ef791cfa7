"""Planning against execution, measured by the server: EXPLAIN ANALYZE EXECUTE of a prepared statement.

pg_stat_statements needs a server restart to load, so the server's own account of one execution is
read instead: `EXPLAIN (ANALYZE, TIMING OFF) EXECUTE name(...)` reports `Planning Time` (taking
the cached generic plan, or planning a custom one for these values) and `Execution Time`. EXECUTE
takes its arguments as SQL literals (a utility statement has no bind parameters), so the values are
written with psycopg's client-side quoting; parsing them is counted as planning, a few microseconds.

`plan_cache_mode` decides per execution: `force_generic_plan` reuses one plan for every value,
`force_custom_plan` plans again with the values, and `auto` (the default) plans custom five times,
then keeps the generic plan unless it looks costlier than the custom ones did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

from pipelines.read.compiler import UNION_CTE, CompiledStatement
from pipelines.resources.rows import one_row

PLAN_CACHE_MODES = ("auto", "force_generic_plan", "force_custom_plan")
# PostgreSQL's auto mode plans custom this many times before it considers the generic plan.
AUTO_CUSTOM_PLANS_BEFORE_GENERIC = 5


@dataclass(frozen=True)
class ServerTiming:
    planning_ms: float
    execution_ms: float


def prepare(connection: psycopg.Connection, name: str, statement: CompiledStatement) -> None:
    """A named, SQL-level prepared statement: the same plan cache a protocol-level one uses."""
    connection.execute(sql.SQL("PREPARE {} AS ").format(sql.Identifier(name)) + sql.SQL(statement.sql))


def deallocate(connection: psycopg.Connection, name: str) -> None:
    connection.execute(sql.SQL("DEALLOCATE {}").format(sql.Identifier(name)))


def set_plan_cache_mode(connection: psycopg.Connection, mode: str) -> None:
    if mode not in PLAN_CACHE_MODES:
        raise ValueError(f"unknown plan_cache_mode {mode!r}")
    connection.execute(sql.SQL("SET LOCAL plan_cache_mode = {}").format(sql.Literal(mode)))


def _explain_execute_sql(name: str, arguments: int, *, timing: bool) -> sql.Composed:
    options = "ANALYZE, TIMING ON, BUFFERS, FORMAT JSON" if timing else "ANALYZE, TIMING OFF, FORMAT JSON"
    placeholders = sql.SQL(", ").join([sql.Placeholder()] * arguments)
    execute = sql.SQL("EXECUTE {}").format(sql.Identifier(name))
    if arguments:
        execute = execute + sql.SQL("(") + placeholders + sql.SQL(")")
    return sql.SQL("EXPLAIN (" + options + ") ") + execute


def explain_execute(
    connection: psycopg.Connection,
    name: str,
    statement: CompiledStatement,
    values: Mapping[str, object],
    *,
    timing: bool = False,
) -> dict:
    """The JSON plan of one execution of the prepared statement `name` with these values."""
    parameters = statement.parameters(values)
    with psycopg.ClientCursor(connection) as cursor:
        cursor.execute(_explain_execute_sql(name, len(parameters), timing=timing), parameters)
        (plan,) = one_row(cursor, "the prepared statement's plan")
    return plan[0]


def server_timing(plan: Mapping) -> ServerTiming:
    return ServerTiming(float(plan["Planning Time"]), float(plan["Execution Time"]))


def plans_chosen(connection: psycopg.Connection, name: str) -> tuple[int, int]:
    """(generic, custom) plans the prepared statement `name` has used so far."""
    row = connection.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = %s", (name,)
    ).fetchone()
    if row is None:
        raise ValueError(f"no prepared statement named {name!r} on this connection")
    return int(row[0]), int(row[1])


def costliest_nodes(plans: Sequence[Mapping], lanes: Sequence[str], count: int) -> list[dict]:
    """The `count` plan nodes with the most time of their own, averaged over the plans of several
    questions (a node is its lane, type, relation and index): where a lane's time goes and why."""
    totals: dict[tuple, list[float]] = {}
    for plan in plans:
        for lane, node, own_ms in charged_nodes(plan, lanes):
            relation = node.get("Relation Name") or node.get("CTE Name")
            key = (lane, node.get("Node Type"), relation, node.get("Index Name"))
            total = totals.setdefault(key, [0.0, 0.0, 0.0])
            total[0] += own_ms
            total[1] += node.get("Actual Rows", 0)
            total[2] += node.get("Actual Loops", 0)
    ranked = sorted(totals.items(), key=lambda item: (-item[1][0], str(item[0])))[:count]
    return [
        {
            "lane": lane,
            "own_ms": own_ms / len(plans),
            "node": node_type,
            "relation": relation,
            "index": index,
            "rows": rows / len(plans),
            "loops": loops / len(plans),
        }
        for (lane, node_type, relation, index), (own_ms, rows, loops) in ranked
    ]


def charged_nodes(plan: Mapping, lanes: Sequence[str]) -> list[tuple[str, Mapping, float]]:
    """(lane, node, own milliseconds) for every node of an EXPLAIN (ANALYZE, TIMING ON) plan.

    A node's own time is its total minus its children's, times its loops (for a node run by
    parallel workers, that is their time added up, not the wall time). It is charged to the
    lane whose MATERIALIZED CTE encloses it (the compiler names a lane's CTEs `<lane>_<part>`), or,
    for what PostgreSQL inlined, to the lane whose branch of the union it sits in (the union's
    branches come in lane order); else to `statement` (the union itself, the final sort). A CTE
    Scan's time is the CTE it reads being produced, which is charged inside that CTE: it counts
    zero."""
    by_length = sorted(lanes, key=len, reverse=True)
    union = f"CTE {UNION_CTE}"
    charged: list[tuple[str, Mapping, float]] = []

    def owner(subplan_name: str, inherited: str) -> str:
        if subplan_name == union:
            return "statement" if len(lanes) > 1 else lanes[0]
        if not subplan_name.startswith("CTE "):
            return inherited
        cte = subplan_name[len("CTE "):]
        return next((lane for lane in by_length if cte == lane or cte.startswith(lane + "_")), inherited)

    def visit(node: Mapping, inherited: str) -> None:
        lane = owner(node.get("Subplan Name", ""), inherited)
        children = node.get("Plans", [])
        # A CTE's subplan runs inside whichever CTE Scan first pulls from it, not inside this node.
        included = [child for child in children if not child.get("Subplan Name", "").startswith("CTE ")]
        own = _total_ms(node) - sum(_total_ms(child) for child in included)
        if node.get("Node Type") != "CTE Scan":
            charged.append((lane, node, max(own, 0.0)))
        branches = [i for i, child in enumerate(children) if child.get("Parent Relationship") == "Member"]
        by_branch = node.get("Subplan Name") == union and len(branches) == len(lanes)
        for i, child in enumerate(children):
            visit(child, lanes[branches.index(i)] if by_branch and i in branches else lane)

    visit(plan["Plan"], "statement")
    return charged


def _total_ms(node: Mapping) -> float:
    return float(node.get("Actual Total Time", 0.0)) * float(node.get("Actual Loops", 1) or 0)
