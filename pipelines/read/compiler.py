"""The compiler: lanes.yaml plus sql_templates/ become ONE find statement, cached per shape.

Every enabled lane is checked (binds only, columns against the schema), its parts become CTEs named
`<lane>_<part>` (a part's own CTEs are hoisted as `<lane>_<part>_<cte>`), and its rows are cast
into the shared row shape. The lanes are `UNION ALL`ed into the MATERIALIZED CTE `ordered_context`;
the outer select returns every column but `priority` and `ordering` and sorts by
`priority, ordering, evidence_id`. Named binds become typed positional parameters.

The text depends only on the shape (the plan, the lane entries, the vector width, the templates),
never on a setting's value: a value is always a bind whose name is the setting's name (or
`<lane>.<setting>` for a lane that overrides it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, reduce
from pathlib import Path

from sqlglot import exp

from pipelines.config import LanegraphConfig
from pipelines.read.dialect import DISTANCE_OPERATORS, ColonPlaceholder, PgVector
from pipelines.read.lane_parts import Part, lane_parts
from pipelines.lanes_config import INTEGER_SETTINGS, SETTING_NAMES, Lane, Plan, limit_expression
from pipelines.read.parameters import Bind, BindTypeError, parameter_values, positional
from pipelines.read.question import question_terms
from pipelines.read.schema import Catalog, load_catalog, schema_fingerprint
from pipelines.read.vector_lane import for_kind
from pipelines.read.templates import (
    Template,
    TemplateError,
    check_binds_only,
    check_columns,
    display_path,
    load_template,
)

# The row every lane renders, with the type each column is cast to before the union.
ROW_SHAPE: dict[str, str] = {
    "evidence_id": "text",
    "ordering": "double precision",
    "line": "text",
    "scopes": "text[]",
    "fact_id": "text",
    "source_chunk_id": "text",
    "source_title": "text",
    "source_uri": "text",
    "document_id": "text",
    "document_created_at": "timestamptz",
    "direct": "boolean",
    "stance": "text",
}
# What the statement returns: `priority` and `ordering` do their work inside it.
RESULT_COLUMNS: tuple[str, ...] = ("lane", *(c for c in ROW_SHAPE if c != "ordering"))
UNION_CTE = "ordered_context"
LANE_LIMIT = "lane_limit"
# The SQL type a bind name is declared with, or None when it names nothing known.
DeclaredTypes = Callable[[str], str | None]


def query_bind_types(dimension: int) -> dict[str, str]:
    """The per-question values every lane template may bind."""
    return {"query_vector": f"vector({dimension})", "question": "text", "question_terms": "text[]"}


def setting_type(name: str) -> str:
    return "bigint" if name in INTEGER_SETTINGS else "double precision"


@dataclass(frozen=True)
class CompiledLane:
    name: str
    kind: str
    priority: int
    cte: str
    templates: tuple[Path, ...]


@dataclass(frozen=True)
class CompiledStatement:
    """One statement: positional SQL, its binds in position order, and what it must reach."""

    sql: str
    binds: tuple[Bind, ...]
    lanes: tuple[CompiledLane, ...] = ()
    # Tables ranked by vector distance under ORDER BY ... LIMIT: each must reach its HNSW index.
    dense_tables: tuple[str, ...] = ()
    # Tables read through their primary key by a BM25 ranking (bm25_posting).
    lexical_tables: tuple[str, ...] = ()
    templates: tuple[Path, ...] = field(default=())

    def parameters(self, values: Mapping[str, object]) -> list[object]:
        """The values in position order, typed for psycopg (see `parameters.parameter_values`)."""
        return parameter_values(self.binds, values)

    def annotated_sql(self) -> str:
        """The SQL with a header naming every parameter and lane, as `lanegraph compile` prints."""
        header = [f"-- ${bind.position} = :{bind.name} ({bind.sql_type})" for bind in self.binds]
        header += [
            f"-- lane {lane.name} (priority {lane.priority}, kind {lane.kind}): "
            + ", ".join(display_path(p) for p in lane.templates)
            for lane in self.lanes
        ]
        return "\n".join(header) + "\n" + self.sql + "\n"


@dataclass(frozen=True)
class LaneShape:
    name: str
    kind: str
    template: str
    limit: str
    overrides: tuple[str, ...]


@dataclass(frozen=True)
class Shape:
    """Everything the SQL text depends on; two configs with equal shapes compile to equal text."""

    dimension: int
    lanes: tuple[LaneShape, ...]
    neighbors: bool
    hops: int
    fuzzy_mentions: bool
    bridges: bool
    named_facts: bool
    turns: bool

    @classmethod
    def of(cls, config: LanegraphConfig) -> Shape:
        plan = config.plan
        lanes = tuple(
            LaneShape(
                name,
                config.lanes[name].kind,
                config.lanes[name].template,
                limit_expression(config.lanes[name].limit).sql(),
                tuple(sorted(config.lanes[name].overrides)),
            )
            for name in plan.order
            if plan.includes(name, config.lanes[name].kind)
        )
        return cls(
            config.pipeline.embedding.dimension, lanes, plan.neighbors, plan.hops, plan.fuzzy_mentions, plan.bridges,
            plan.named_facts, plan.turns,
        )

    def plan(self) -> Plan:
        return Plan.model_construct(
            order=[lane.name for lane in self.lanes],
            neighbors=self.neighbors,
            hops=self.hops,
            fuzzy_mentions=self.fuzzy_mentions,
            bridges=self.bridges,
            named_facts=self.named_facts,
            turns=self.turns,
        )


def compile_find(config: LanegraphConfig, *, cached: bool = True) -> CompiledStatement:
    """The find statement for this configuration's shape, compiled once per shape (`cached=False`
    compiles afresh: the validator does, to prove values never reach the text)."""
    shape = Shape.of(config)
    if not shape.lanes:
        raise TemplateError("the plan enables no lane: nothing to compile")
    if not cached:
        return _compile_shape(shape)
    return _cached_compile(shape, _templates_fingerprint(shape))


def _templates_fingerprint(shape: Shape) -> tuple[object, ...]:
    """Changes when a template this shape reads, or a migration, does: an edited file is never
    served stale, and edits to unrelated templates do not evict the statement."""
    plan = shape.plan()
    paths = sorted(
        {
            part.template
            for lane in shape.lanes
            for part in lane_parts(lane.name, _lane(lane), plan)
            if part.template is not None
        }
    )
    stamps = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue  # compiling reports the missing file with its lane
        stamps.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(stamps), schema_fingerprint()


def _lane(lane: LaneShape) -> Lane:
    return Lane.model_construct(kind=lane.kind, template=lane.template, limit=lane.limit)


@lru_cache(maxsize=64)
def _cached_compile(shape: Shape, _fingerprint: tuple[object, ...]) -> CompiledStatement:
    return _compile_shape(shape)


def _compile_shape(shape: Shape) -> CompiledStatement:
    catalog = load_catalog()
    plan = shape.plan()
    declared = _declared_types(shape)
    ctes: list[exp.CTE] = []
    rows: list[exp.Query] = []
    lanes: list[CompiledLane] = []
    recursive = False
    for priority, lane_shape in enumerate(shape.lanes):
        parts = lane_parts(lane_shape.name, _lane(lane_shape), plan)
        composed = _LaneComposer(lane_shape, catalog, declared).compose(parts)
        ctes.extend(composed.ctes)
        recursive |= composed.recursive
        rows.append(_row_select(lane_shape.name, priority, composed.final_cte))
        lanes.append(
            CompiledLane(lane_shape.name, lane_shape.kind, priority, composed.final_cte, composed.templates)
        )
    union = reduce(lambda left, right: exp.union(left, right, distinct=False), rows)
    ctes.append(exp.CTE(this=union, alias=exp.TableAlias(this=exp.to_identifier(UNION_CTE)), materialized=True))
    statement = (
        exp.select(*RESULT_COLUMNS)
        .from_(UNION_CTE)
        .order_by("priority", "ordering", "evidence_id", dialect=PgVector)
    )
    statement.set("with_", exp.With(expressions=ctes, recursive=recursive))
    templates = tuple(path for lane in lanes for path in lane.templates)
    return _finish(statement, declared, catalog, tuple(lanes), templates, where="the find statement")


def compile_template(
    path: Path,
    *,
    bind_types: Mapping[str, str] | None = None,
    dimension: int = 384,
    lane: str | None = None,
) -> CompiledStatement:
    """Compile one single-statement template (a primitive such as sql_templates/primitives/bm25.sql)
    with the same checks as a lane: binds only, schema-checked columns, typed positional binds.

    A bind's type comes from `bind_types`, else from the setting of that name, else from the
    per-query values (query_vector, question, question_terms), else from the template's own
    `CAST(:bind AS type)`."""
    catalog = load_catalog()
    template = load_template(path, lane)
    check_binds_only(template)
    check_columns(template, catalog)
    extra = dict(bind_types or {})
    query_types = query_bind_types(dimension)

    def declared(name: str) -> str | None:
        if name in extra:
            return extra[name]
        if name in SETTING_NAMES:
            return setting_type(name)
        return query_types.get(name)

    return _finish(template.tree, declared, catalog, (), (path,), where=template.location(None))


def _declared_types(shape: Shape) -> DeclaredTypes:
    query_types = query_bind_types(shape.dimension)

    def declared(name: str) -> str | None:
        setting = name.split(".", 1)[1] if "." in name else name
        if setting in SETTING_NAMES:
            return setting_type(setting)
        return query_types.get(name)

    return declared


def _finish(
    tree: exp.Expr,
    declared: DeclaredTypes,
    catalog: Catalog,
    lanes: tuple[CompiledLane, ...],
    templates: tuple[Path, ...],
    where: str,
) -> CompiledStatement:
    try:
        converted, binds = positional(_coalesce_as_case(tree), declared)
    except BindTypeError as error:
        raise TemplateError(f"{where}: {error}") from None
    return CompiledStatement(
        sql=converted.sql(dialect=PgVector, pretty=True, comments=False),
        binds=binds,
        lanes=lanes,
        dense_tables=_dense_tables(converted, catalog),
        lexical_tables=tuple(
            sorted({t.name for t in converted.find_all(exp.Table) if t.name == "bm25_posting"})
        ),
        templates=templates,
    )


def _coalesce_as_case(tree: exp.Expr) -> exp.Expr:
    """`tree` with every coalesce() of columns and constants written as the CASE it means.

    Row security lets a join or filter drive an index scan of a confined table only through
    leakproof expressions, and PostgreSQL counts any COALESCE as possibly leaky (it is not among
    the node types contain_leaked_vars trusts) while it trusts CASE and IS NULL. A join on a
    coalesced key, such as a FULL JOIN's merged chunk id, therefore read the whole chunk or document
    table for a confined caller instead of probing its primary key. Only plain arguments are
    rewritten, since CASE evaluates an argument twice."""

    def rewrite(node: exp.Expr) -> exp.Expr:
        arguments = [node.this, *node.expressions] if isinstance(node, exp.Coalesce) else []
        if not arguments or not all(isinstance(a, (exp.Column, exp.Literal, exp.Boolean, exp.Null)) for a in arguments):
            return node
        return exp.Case(
            ifs=[
                exp.If(this=exp.Not(this=exp.Is(this=argument.copy(), expression=exp.Null())), true=argument.copy())
                for argument in arguments[:-1]
            ],
            default=arguments[-1].copy(),
        )

    return tree.transform(rewrite)


def _dense_tables(tree: exp.Expr, catalog: Catalog) -> tuple[str, ...]:
    """Tables a select ranks by vector distance with ORDER BY ... LIMIT (an HNSW index scan)."""
    tables: set[str] = set()
    for select in tree.find_all(exp.Select):
        order, source = select.args.get("order"), select.args.get("from_")
        if order is None or select.args.get("limit") is None or source is None:
            continue
        key = order.expressions[0].this
        if (
            isinstance(key, DISTANCE_OPERATORS)
            and isinstance(source.this, exp.Table)
            and source.this.name in catalog.hnsw_indexes
        ):
            tables.add(source.this.name)
    return tuple(sorted(tables))


def _row_select(lane: str, priority: int, cte: str) -> exp.Select:
    columns = [
        exp.alias_(exp.Literal.string(lane), "lane"),
        exp.alias_(exp.Literal.number(priority), "priority"),
        *(
            exp.alias_(exp.cast(exp.column(name, table=cte), sql_type, dialect=PgVector), name)
            for name, sql_type in ROW_SHAPE.items()
        ),
    ]
    return exp.select(*columns).from_(cte)


@dataclass
class _Composed:
    ctes: list[exp.CTE]
    final_cte: str
    templates: tuple[Path, ...]
    recursive: bool


class _LaneComposer:
    """Turns one lane's parts into CTEs, checking each template on the way."""

    def __init__(self, lane: LaneShape, catalog: Catalog, declared: DeclaredTypes) -> None:
        self.lane = lane
        self.catalog = catalog
        self.declared = declared
        self.columns: dict[str, tuple[str, ...]] = {}
        self.ctes: list[exp.CTE] = []
        self.templates: list[Path] = []
        self.recursive = False

    def cte_name(self, part: str) -> str:
        name = f"{self.lane.name}_{part}"
        if self.catalog.has_table(name):
            raise TemplateError(f"lane {self.lane.name}: CTE name {name} would hide the table of that name")
        return name

    def compose(self, parts: Iterable[Part]) -> _Composed:
        final = ""
        for part in parts:
            if part.template is None:
                query = self._union(part)
            else:
                template = for_kind(load_template(part.template, self.lane.name), self.lane.kind)
                query = self._template_part(part, template)
                self.templates.append(part.template)
            final = self.cte_name(part.name)
            self.ctes.append(exp.CTE(this=query, alias=exp.TableAlias(this=exp.to_identifier(final))))
        # Composite lanes always end in a template part; it alone yields the lane's rows.
        self._check_row_shape(template, self.columns[part.name])
        return _Composed(self.ctes, final, tuple(self.templates), self.recursive)

    def _union(self, part: Part) -> exp.Query:
        for source in part.union_of:
            missing = set(part.columns) - set(self.columns[source])
            if missing:
                raise TemplateError(
                    f"lane {self.lane.name}: part {source} lacks column(s) {', '.join(sorted(missing))} "
                    f"that {part.name} unions"
                )
        self.columns[part.name] = part.columns
        selects: list[exp.Query] = [
            exp.select(*(exp.column(c, table=source) for c in part.columns)).from_(
                exp.to_table(self.cte_name(source)).as_(source)
            )
            for source in part.union_of
        ]
        return reduce(lambda left, right: exp.union(left, right, distinct=False), selects)

    def _template_part(self, part: Part, template: Template) -> exp.Query:
        check_binds_only(template)
        inputs = dict(self.columns)
        inputs.update({alias: self.columns[target] for alias, target in part.reads.items()})
        self.columns[part.name] = check_columns(template, self.catalog, inputs)
        self._check_bind_names(part, template)
        tree = template.tree.copy()
        self._rewrite_binds(tree, part)
        part_cte = self.cte_name(part.name)
        nested = tree.args.get("with_")
        renames = {name: self.cte_name(name) for name in self.columns if name != part.name}
        renames.update({alias: self.cte_name(target) for alias, target in part.reads.items()})
        if nested is not None:
            self.recursive |= bool(nested.args.get("recursive"))
            renames.update({cte.alias: f"{part_cte}_{cte.alias}" for cte in nested.expressions})
        _rename_tables(tree, renames)
        if nested is not None:
            tree.set("with_", None)
            for cte in nested.expressions:
                cte.set("alias", exp.TableAlias(this=exp.to_identifier(renames[cte.alias]), columns=cte.args["alias"].columns))
                self.ctes.append(cte)
        return tree

    def _check_bind_names(self, part: Part, template: Template) -> None:
        lines = template.bind_lines()
        for name in template.bind_names():
            bound = part.binds.get(name, name)
            if bound == LANE_LIMIT or self.declared(bound) is not None:
                continue
            raise template.error(
                lines.get(name),
                f"unknown setting '{bound}' (bind :{name}); settings are: {', '.join(sorted(SETTING_NAMES))}",
            )

    def _rewrite_binds(self, tree: exp.Expr, part: Part) -> None:
        limit = limit_expression(self.lane.limit)
        for node in list(tree.find_all(ColonPlaceholder)):
            name = part.binds.get(node.name, node.name)
            if name == LANE_LIMIT:
                node.replace(exp.Paren(this=self._override_binds(limit.copy())))
            else:
                node.replace(self._placeholder(name))

    def _override_binds(self, limit: exp.Expr) -> exp.Expr:
        return limit.transform(
            lambda node: self._placeholder(node.name) if isinstance(node, exp.Column) else node
        )

    def _placeholder(self, setting: str) -> ColonPlaceholder:
        name = f"{self.lane.name}.{setting}" if setting in self.lane.overrides else setting
        return ColonPlaceholder(this=name)

    def _check_row_shape(self, template: Template, columns: tuple[str, ...]) -> None:
        missing = [c for c in ROW_SHAPE if c not in columns]
        extra = [c for c in columns if c not in ROW_SHAPE]
        if missing or extra:
            problems = []
            if missing:
                problems.append(f"missing {', '.join(missing)}")
            if extra:
                problems.append(f"unexpected {', '.join(extra)}")
            raise template.error(None, f"the lane's rows must have exactly the row shape columns ({'; '.join(problems)})")


def _rename_tables(tree: exp.Expr, renames: Mapping[str, str]) -> None:
    """Point table references at their lane-qualified CTEs, keeping the name the template used as
    the alias so its qualified columns still resolve."""
    for table in list(tree.find_all(exp.Table)):
        if table.args.get("db") or table.name not in renames:
            continue
        alias = table.alias or table.name
        table.set("this", exp.to_identifier(renames[table.name]))
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))


def bind_values(
    config: LanegraphConfig, *, question: str, query_vector: object, k: int | None = None
) -> dict[str, object]:
    """Every value the find statement may bind: the settings (k replaced when given), each lane's
    overrides under `<lane>.<setting>`, and the question's vector, text and terms."""
    values: dict[str, object] = config.settings.model_dump()
    if k is not None:
        values["k"] = k
    for name, lane in config.lanes.items():
        for setting in lane.overrides:
            values[f"{name}.{setting}"] = getattr(lane.settings, setting)
    values.update(query_vector=query_vector, question=question, question_terms=question_terms(question))
    return values
