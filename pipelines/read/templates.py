"""One SQL template: parsed with the pgvector dialect and checked before it joins a statement.

Checks, each failing with `lane L: FILE:LINE: message`:
- one SELECT (or set operation), no positional placeholders: values arrive as named `:binds`;
- binds only: no literal in LIMIT/OFFSET and no literal compared with a column, unless the line
  carries the allow-list marker `-- @constant` (a true constant, e.g. `perspective = ''`);
- ANN windows: a select ranking a table by vector distance to a bind (`ORDER BY embedding <=>
  :query_vector LIMIT n`) takes exactly ANN_WINDOW rows, a constant, and binds cut after it;
- every table is in the schema (or is another part of the same lane) and every column resolves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from pipelines.read.dialect import DISTANCE_OPERATORS, ColonPlaceholder, PgVector
from pipelines.lanes_config import ANN_WINDOW
from pipelines.read.schema import Catalog
from pipelines.errors import ConfigError, first_line_of
from pipelines.shipped import SHIPPED_ROOT

CONSTANT_MARKER = "@constant"

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.Is, exp.In, exp.Between)
_CONSTANTS = (exp.Literal, exp.Boolean)


class TemplateError(ConfigError):
    """A template breaks a rule; the message names the lane, the file and the line."""


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(SHIPPED_ROOT))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Template:
    path: Path
    text: str
    tree: exp.Query
    lane: str | None = None

    def location(self, line: int | None) -> str:
        where = display_path(self.path) + (f":{line}" if line else "")
        return f"lane {self.lane}: {where}" if self.lane else where

    def error(self, line: int | None, message: str) -> TemplateError:
        return TemplateError(f"{self.location(line)}: {message}")

    def bind_lines(self) -> dict[str, int]:
        """Every `:name` bind and the line it first appears on (placeholders carry no position)."""
        lines: dict[str, int] = {}
        for number, line in enumerate(self.text.splitlines(), start=1):
            code = line.split("--", 1)[0]
            for match in re.finditer(r"(?<![:\w]):([A-Za-z_]\w*)", code):
                lines.setdefault(match.group(1), number)
        return lines

    def bind_names(self) -> list[str]:
        return list(dict.fromkeys(node.name for node in self.tree.find_all(ColonPlaceholder)))

    def allows_constant(self, line: int | None) -> bool:
        if not line:
            return False
        return CONSTANT_MARKER in self.text.splitlines()[line - 1]


def load_template(path: Path, lane: str | None = None) -> Template:
    """Parse a template file; any problem names the lane, file and line."""
    try:
        modified = path.stat().st_mtime_ns
    except (OSError, ValueError):
        raise Template(path, "", exp.select("1"), lane).error(None, "template file not found") from None
    return _parse(path, modified, lane)


@cache
def _parse(path: Path, _mtime_ns: int, lane: str | None) -> Template:
    where = Template(path, "", exp.select("1"), lane)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise where.error(None, f"cannot read template ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise where.error(None, f"not valid UTF-8 at byte {error.start}") from None
    try:
        statements = [s for s in sqlglot.parse(text, dialect=PgVector) if s is not None]
    except sqlglot.errors.ParseError as error:
        first = error.errors[0] if error.errors else {}
        raise where.error(first.get("line"), f"cannot parse: {first.get('description', error)}") from None
    # The tokenizer's errors (an unterminated string) and nesting too deep for the parser.
    except (sqlglot.errors.SqlglotError, RecursionError) as error:
        raise where.error(None, f"cannot parse: {first_line_of(error)}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise where.error(None, "a template is exactly one SELECT statement")
    template = Template(path, text, statements[0], lane)
    _check_placeholders(template)
    return template


def _check_placeholders(template: Template) -> None:
    for node in template.tree.find_all(exp.Parameter, exp.Placeholder):
        if not isinstance(node, ColonPlaceholder):
            raise template.error(
                _line_of(node), f"positional placeholder {node.sql(dialect=PgVector)}: name every bind, as :name"
            )


def _line_of(node: exp.Expr) -> int | None:
    for candidate in (node, *node.walk()):
        line = candidate.meta.get("line") if candidate.meta else None
        if line is None and isinstance(candidate, (exp.Column, exp.Table)):
            line = candidate.this.meta.get("line") if isinstance(candidate.this, exp.Expr) else None
        if line:
            return line
    return None


def check_binds_only(template: Template) -> None:
    """No literal in LIMIT/OFFSET, none compared with a column, unless allow-listed on its line;
    every ANN window takes exactly ANN_WINDOW rows."""
    _check_ann_windows(template)
    for clause in template.tree.find_all(exp.Limit, exp.Offset):
        for literal in clause.find_all(*_CONSTANTS):
            line = _line_of(literal)
            if not template.allows_constant(line):
                raise template.error(
                    line,
                    f"literal {literal.sql(dialect=PgVector)} in {clause.key.upper()}: bind a setting "
                    f"(e.g. :lane_limit) or mark a true constant with `-- {CONSTANT_MARKER}`",
                )
    for comparison in template.tree.find_all(*_COMPARISONS):
        candidates: list[object] = [comparison.this, *comparison.expressions, comparison.args.get("expression"),
                                    comparison.args.get("low"), comparison.args.get("high")]
        operands = [o for o in candidates if isinstance(o, exp.Expr)]
        if not any(o.find(exp.Column) for o in operands):
            continue
        for operand in operands:
            constant = _bare_constant(operand)
            if constant is None:
                continue
            line = _line_of(constant)
            if not template.allows_constant(line):
                raise template.error(
                    line,
                    f"literal {constant.sql(dialect=PgVector)} compared with a column in "
                    f"`{comparison.sql(dialect=PgVector)}`: bind a setting, or mark a true constant "
                    f"with `-- {CONSTANT_MARKER}`",
                )


def ann_windows(template: Template) -> Iterator[exp.Select]:
    """Selects that rank a table (not one of the template's CTEs) by vector distance to a bind."""
    ctes = {cte.alias for cte in template.tree.find_all(exp.CTE)}
    for select in template.tree.find_all(exp.Select):
        order, source = select.args.get("order"), select.args.get("from_")
        if order is None or source is None or not isinstance(source.this, exp.Table):
            continue
        key = order.expressions[0].this
        if isinstance(key, DISTANCE_OPERATORS) and key.find(ColonPlaceholder) and source.this.name not in ctes:
            yield select


def _check_ann_windows(template: Template) -> None:
    for select in ann_windows(template):
        limit = select.args.get("limit")
        depth = limit.expression if isinstance(limit, exp.Limit) else None
        if not (isinstance(depth, exp.Literal) and depth.is_int and int(depth.this) == ANN_WINDOW):
            shown = depth.sql(dialect=PgVector, comments=False) if isinstance(depth, exp.Expr) else "none"
            raise template.error(
                (_line_of(limit) if limit is not None else None) or _line_of(select.args["order"]),
                f"an ANN window takes `LIMIT {ANN_WINDOW}  -- {CONSTANT_MARKER}: ...` (got {shown}): a bound "
                "limit makes the generic plan scan and sort the whole table; cut to the setting after it",
            )


def _bare_constant(operand: exp.Expr) -> exp.Expr | None:
    """The literal an operand is, seen through casts, signs and parentheses (NULL is not a value)."""
    node = operand
    while isinstance(node, (exp.Cast, exp.Neg, exp.Paren)):
        node = node.this
    if isinstance(node, exp.Tuple):
        return next((item for item in node.expressions if isinstance(item, _CONSTANTS)), None)
    return node if isinstance(node, _CONSTANTS) else None


def check_columns(
    template: Template, catalog: Catalog, inputs: Mapping[str, tuple[str, ...]] | None = None
) -> tuple[str, ...]:
    """Resolve every table and column; return the template's output columns.

    `inputs` are tables the lane provides (its other parts), by the name the template uses."""
    relations = {**catalog.columns, **(inputs or {})}
    for scope in traverse_scope(template.tree):
        _check_scope(template, scope, relations)
    return _output_columns(template, template.tree, relations)


def _check_scope(template: Template, scope: Scope, relations: Mapping[str, tuple[str, ...]]) -> None:
    for source in scope.sources.values():
        if isinstance(source, exp.Table) and source.name not in relations and not _is_cte_name(scope, source.name):
            raise template.error(_line_of(source), f"unknown table {source.name}")
    for column in scope.columns:
        if isinstance(column.this, exp.Star):
            continue
        table = column.table
        if table:
            columns = _source_columns(template, scope, table, relations)
            if columns is None:
                raise template.error(_line_of(column), f"unknown table or alias {table} in {column.sql()}")
            if column.name not in columns:
                raise template.error(_line_of(column), f"unknown column {column.sql()}")
            continue
        if _is_output_alias(scope, column):
            continue
        owners = [
            alias
            for alias in _visible_aliases(scope)
            if column.name in (_source_columns(template, scope, alias, relations) or ())
        ]
        if not owners:
            raise template.error(_line_of(column), f"unknown column {column.name}")
        if len(owners) > 1 and not _nearest_scope_owns(template, scope, column.name, relations):
            raise template.error(
                _line_of(column), f"column {column.name} is ambiguous ({', '.join(owners)}): qualify it"
            )


def _is_cte_name(scope: Scope, name: str) -> bool:
    current: Scope | None = scope
    while current is not None:
        if name in current.cte_sources:
            return True
        current = current.parent
    return False


def _nearest_scope_owns(template: Template, scope: Scope, name: str, relations: Mapping[str, tuple[str, ...]]) -> bool:
    local = [a for a in scope.sources if name in (_source_columns(template, scope, a, relations) or ())]
    return len(local) == 1


def _is_output_alias(scope: Scope, column: exp.Column) -> bool:
    """A bare name in the select's own ORDER BY or GROUP BY may name one of its output columns."""
    select = scope.expression
    if not isinstance(select, exp.Select) or column.name not in select.named_selects:
        return False
    clause = column.find_ancestor(exp.Order, exp.Group)
    return clause is not None and clause.parent is select


def _visible_aliases(scope: Scope) -> Iterator[str]:
    current: Scope | None = scope
    seen: set[str] = set()
    while current is not None:
        for alias in current.sources:
            if alias not in seen:
                seen.add(alias)
                yield alias
        current = current.parent
    return


def _source_columns(
    template: Template, scope: Scope, alias: str, relations: Mapping[str, tuple[str, ...]]
) -> tuple[str, ...] | None:
    current: Scope | None = scope
    while current is not None:
        source = current.sources.get(alias)
        if source is not None:
            node = current.selected_sources.get(alias, (None, None))[0]
            renamed = _alias_columns(node)
            if isinstance(source, exp.Table):
                if renamed:
                    return renamed
                return relations.get(source.name) or _cte_columns(template, current, source.name, relations)
            if renamed:
                return renamed
            return _scope_columns(template, source, relations)
        current = current.parent
    return None


def _alias_columns(node: exp.Expr | None) -> tuple[str, ...]:
    if node is None:
        return ()
    alias = node.args.get("alias")
    if isinstance(alias, exp.TableAlias) and alias.columns:
        return tuple(column.name for column in alias.columns)
    return ()


def _cte_columns(
    template: Template, scope: Scope, name: str, relations: Mapping[str, tuple[str, ...]]
) -> tuple[str, ...] | None:
    current: Scope | None = scope
    while current is not None:
        cte_scope = current.cte_sources.get(name)
        if isinstance(cte_scope, Scope):
            return _scope_columns(template, cte_scope, relations)
        current = current.parent
    return None


def _scope_columns(template: Template, scope: Scope, relations: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    expression = scope.expression
    cte = expression.parent if isinstance(expression.parent, exp.CTE) else None
    if cte is not None:
        renamed = _alias_columns(cte)
        if renamed:
            return renamed
    while isinstance(expression, (exp.Lateral, exp.Subquery)) and isinstance(expression.this, exp.Query | exp.Subquery):
        expression = expression.this
    if isinstance(expression, (exp.Unnest, exp.UDTF)):
        alias = expression.args.get("alias")
        if isinstance(alias, exp.TableAlias):
            if alias.columns:
                return tuple(column.name for column in alias.columns)
            return (alias.name,)
        return ()
    return _output_columns(template, expression, relations, scope)


def _output_columns(
    template: Template,
    query: exp.Expr,
    relations: Mapping[str, tuple[str, ...]],
    scope: Scope | None = None,
) -> tuple[str, ...]:
    while isinstance(query, exp.SetOperation):
        query = query.this
    if not isinstance(query, exp.Select):
        return ()
    names: list[str] = []
    for projection in query.expressions:
        if isinstance(projection, exp.Star) or (
            isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
        ):
            owner = projection.table if isinstance(projection, exp.Column) else ""
            names.extend(_star_columns(template, query, owner, relations, scope))
        else:
            names.append(projection.alias_or_name)
    return tuple(names)


def _star_columns(
    template: Template,
    select: exp.Select,
    owner: str,
    relations: Mapping[str, tuple[str, ...]],
    scope: Scope | None,
) -> list[str]:
    select_scope = scope if scope is not None and scope.expression is select else None
    if select_scope is None:
        select_scope = next((s for s in traverse_scope(select) if s.expression is select), None)
    if select_scope is None:
        return []
    aliases = [owner] if owner else list(select_scope.sources)
    names: list[str] = []
    for alias in aliases:
        names.extend(_source_columns(template, select_scope, alias, relations) or ())
    return names
