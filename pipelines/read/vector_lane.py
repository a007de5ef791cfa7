"""The vector lanes: one template, `sql_templates/lanes/vector.sql`, serves three kinds.

Working memory, entity profiles and communities each rank one table's rows by vector distance to
the question within the distance floor, and differ only in the table, its key, the evidence id and
line they render, and a guard. The template reads `vector_item`, a stand-in for the kind's table,
with `item_id`, `evidence_id` and `line` standing for the kind's key, evidence id and line;
`VECTOR_KINDS` names them per kind. A kind's guard needs the kind's row, so for a guarded kind the
floor and the cut to the lane's limit follow the join: the window is cut at `fusion_depth` first
(the depth of every ranking), and guarded rows cannot empty the lane.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from pipelines.read.dialect import ColonPlaceholder, PgVector
from pipelines.read.templates import Template

STAND_IN = "vector_item"
STAND_IN_KEY = "item_id"


@dataclass(frozen=True)
class VectorKind:
    """What a vector lane of one kind reads and renders; each text is a SQL expression or clause
    over `table` (columns are checked against the schema when the lane compiles)."""

    table: str
    key: str
    evidence_id: str
    line: str
    # Tables the line also reads, as `JOIN` clauses without the keyword.
    joins: tuple[str, ...] = ()
    guard: str | None = None


VECTOR_KINDS: dict[str, VectorKind] = {
    "working_memory": VectorKind(
        table="session_item",
        key="id",
        evidence_id="'session:' || session_item.id",
        line="'Noted ' || to_char(session_item.created_at, 'YYYY-MM-DD') || ': ' || session_item.text",
        # A promoted item is found as a source instead.
        guard="session_item.promoted_at IS NULL",
    ),
    "profile": VectorKind(
        table="profile",
        key="entity_id",
        evidence_id="'profile:' || profile.entity_id",
        line="entity.name || ': ' || profile.summary",
        joins=("entity ON entity.id = profile.entity_id",),
    ),
    "communities": VectorKind(
        table="community",
        key="id",
        evidence_id="'community:' || community.id",
        line="community.label || ': ' || community.summary",
    ),
}


def for_kind(template: Template, kind: str) -> Template:
    """The template with `vector_item` made the table of the lane's kind; a template that does not
    read the stand-in is returned as it is."""
    if not any(table.name == STAND_IN for table in template.tree.find_all(exp.Table)):
        return template
    spec = VECTOR_KINDS.get(kind)
    if spec is None:
        raise template.error(
            None,
            f"{STAND_IN} stands for the table of a vector lane's kind ({', '.join(VECTOR_KINDS)}); "
            f"this lane's kind is {kind}",
        )
    tree = template.tree.copy()
    for table in tree.find_all(exp.Table):
        if table.name == STAND_IN:
            table.set("this", exp.to_identifier(spec.table))
    rendered = {"evidence_id": spec.evidence_id, "line": spec.line}
    for column in list(tree.find_all(exp.Column)):
        if column.table == STAND_IN and column.name in rendered:
            column.replace(_parse(rendered[column.name]))
            continue
        if column.name == STAND_IN_KEY:
            column.set("this", exp.to_identifier(spec.key))
        if column.table == STAND_IN:
            column.set("table", exp.to_identifier(spec.table))
    if not isinstance(tree, exp.Select):
        raise template.error(None, "a vector lane's template ends in one SELECT")
    for join in spec.joins:
        tree = tree.join(join, dialect=PgVector, copy=False)
    if spec.guard is not None:
        _guard(template, tree, spec)
    return Template(template.path, template.text, tree, template.lane)


def _guard(template: Template, rows: exp.Select, spec: VectorKind) -> None:
    """Move the floor and the lane's cut of `nearest` after the join, behind the guard."""
    with_ = rows.args.get("with_")
    nearest = next((cte.this for cte in with_.expressions if cte.alias == "nearest"), None) if with_ else None
    if not isinstance(nearest, exp.Select) or nearest.args.get("where") is None or nearest.args.get("limit") is None:
        raise template.error(None, "a guarded vector lane needs the CTE `nearest` with its floor (WHERE) and cut (LIMIT)")
    floor = nearest.args["where"].this
    for column in floor.find_all(exp.Column):
        column.set("table", exp.to_identifier("nearest"))
    rows.set("limit", nearest.args["limit"])
    nearest.set("where", None)
    nearest.set("limit", exp.Limit(expression=ColonPlaceholder(this="fusion_depth")))
    rows.where(_parse(spec.guard or ""), floor, copy=False)
    rows.order_by(exp.column("distance", table="nearest"), exp.column(spec.key, table=spec.table), copy=False)


def _parse(sql: str) -> exp.Expr:
    """A kind's expression, without the line numbers of its own text: an error in it then names the
    template file, not a line of the template it does not stand on."""
    parsed = sqlglot.parse_one(sql, dialect=PgVector)
    for node in parsed.walk():
        if node.meta:
            node.meta.pop("line", None)
    return parsed
