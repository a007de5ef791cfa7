"""Named binds become typed positional parameters, and values become what psycopg sends.

`:k` becomes `CAST($2 AS BIGINT)` everywhere it appears: one position per name, one explicit type
per position. The explicit type fixes the parameter type the server plans with, and
`parameter_values` sends every value with a dumper of exactly that type: psycopg would otherwise
send a Python int as int2, int4 or int8 by its size, and each choice is a different prepared
statement (a different cache entry) for the same SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from psycopg.types.numeric import Float8, Int8
from sqlglot import exp

from pipelines.read.dialect import ColonPlaceholder, PgVector


@dataclass(frozen=True)
class Bind:
    """One positional parameter: `$position`, the bind name it came from, its SQL type."""

    name: str
    position: int
    sql_type: str


class BindTypeError(ValueError):
    """A bind has no type, two types, or a value that does not fit its type."""


def positional(
    tree: exp.Expr, declared: Callable[[str], str | None]
) -> tuple[exp.Expr, tuple[Bind, ...]]:
    """Replace every `:name` with `CAST($n AS type)`; same name, same `$n`.

    The type is `declared(name)`, or else the type the template itself casts the bind to (a
    template may write `CAST(:ids AS text[])`); a bind with neither is an error."""
    tree = tree.copy()
    placeholders = [node for node in tree.walk(bfs=False) if isinstance(node, ColonPlaceholder)]
    types: dict[str, exp.DataType] = {}
    for node in placeholders:
        if node.name in types:
            continue
        declared_type = declared(node.name)
        if declared_type is not None:
            types[node.name] = exp.DataType.build(declared_type, dialect=PgVector)
            continue
        casts = {
            p.parent.to.sql(dialect=PgVector): p.parent.to
            for p in placeholders
            if p.name == node.name and isinstance(p.parent, exp.Cast) and p.arg_key == "this"
        }
        if len(casts) != 1:
            reason = "no type" if not casts else f"conflicting casts ({', '.join(sorted(casts))})"
            raise BindTypeError(f"bind :{node.name} has {reason}: name a setting or cast it once")
        types[node.name] = next(iter(casts.values()))
    positions = {name: index for index, name in enumerate(types, start=1)}
    for node in placeholders:
        sql_type = types[node.name]
        parameter = exp.Parameter(this=exp.Literal.number(positions[node.name]))
        parent = node.parent
        if isinstance(parent, exp.Cast) and node.arg_key == "this" and parent.to == sql_type:
            node.replace(parameter)
        else:
            node.replace(exp.Cast(this=parameter, to=sql_type.copy()))
    binds = tuple(
        Bind(name, positions[name], types[name].sql(dialect=PgVector).lower()) for name in types
    )
    return tree, binds


def parameter_values(binds: tuple[Bind, ...], values: Mapping[str, object]) -> list[object]:
    """The values in position order, each wrapped so psycopg sends exactly the bind's type."""
    missing = [bind.name for bind in binds if bind.name not in values]
    if missing:
        raise BindTypeError(f"no value for bind(s): {', '.join(missing)}")
    return [_typed(bind, values[bind.name]) for bind in binds]


def _typed(bind: Bind, value: object) -> object:
    sql_type = bind.sql_type
    if value is None:
        return None
    if sql_type in ("bigint", "int", "integer", "smallint"):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise BindTypeError(f"bind :{bind.name} is {sql_type}, got {type(value).__name__}")
        return Int8(int(value))
    if sql_type in ("double precision", "double", "float", "real"):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise BindTypeError(f"bind :{bind.name} is {sql_type}, got {type(value).__name__}")
        return Float8(float(value))
    if sql_type.startswith("vector"):
        vector = np.asarray(value, dtype=np.float32)
        width = sql_type[len("vector(") : -1]
        if vector.ndim != 1 or (width.isdigit() and vector.shape[0] != int(width)):
            raise BindTypeError(f"bind :{bind.name} is {sql_type}, got an array of shape {vector.shape}")
        return vector
    if sql_type.endswith("[]"):
        if isinstance(value, (str, bytes)):
            raise BindTypeError(f"bind :{bind.name} is {sql_type}, got a single string")
        if not isinstance(value, Iterable):
            raise BindTypeError(f"bind :{bind.name} is {sql_type}, got {type(value).__name__}")
        element = Bind(bind.name, bind.position, sql_type[:-2])
        return [_typed(element, item) for item in value]
    if sql_type in ("text", "varchar"):
        if not isinstance(value, str):
            raise BindTypeError(f"bind :{bind.name} is text, got {type(value).__name__}")
        return value
    return value
