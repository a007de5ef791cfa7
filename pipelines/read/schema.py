"""The schema the templates are checked against, read from the migrations themselves.

The tables are declared once, in sql_templates/schema/; this module parses those files with the
pgvector dialect (CREATE TABLE, CREATE VIEW, ALTER TABLE ADD/DROP/RENAME COLUMN, CREATE INDEX) so a
template can be checked without a database, and so the cacheability check knows which HNSW index
each dense ranking must reach.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import sqlglot
from sqlglot import exp

from pipelines.read.dialect import PgVector
from pipelines.errors import ConfigError
from pipelines.resources.migrations import SCHEMA_DIR, discover_migrations

# The width does not change which columns exist; any value renders the migrations parseable.
_ANY_DIMENSION = 3


@dataclass(frozen=True)
class Catalog:
    """Columns of every table and view, and the HNSW index of every embedded table."""

    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hnsw_indexes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    primary_keys: dict[str, str] = field(default_factory=dict)

    def has_table(self, name: str) -> bool:
        return name in self.columns


def schema_fingerprint(schema_dir: Path = SCHEMA_DIR) -> tuple[tuple[str, int, int], ...]:
    """Changes whenever a migration file does, so a cached catalog is never stale."""
    return tuple(
        (m.path.name, m.path.stat().st_mtime_ns, m.path.stat().st_size)
        for m in discover_migrations(schema_dir)
    )


def load_catalog(schema_dir: Path = SCHEMA_DIR) -> Catalog:
    return _catalog(schema_dir, schema_fingerprint(schema_dir))


@cache
def _catalog(schema_dir: Path, fingerprint: tuple[tuple[str, int, int], ...]) -> Catalog:
    catalog = Catalog()
    for migration in discover_migrations(schema_dir):
        for statement in _statements(migration.render(_ANY_DIMENSION), migration.path):
            _apply(catalog, statement, migration.path)
    return catalog


def _statements(text: str, path: Path) -> list[exp.Expr]:
    # sqlglot logs a warning for every statement it keeps as an opaque Command (CREATE EXTENSION);
    # those never declare columns, so the warning is noise here.
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return [s for s in sqlglot.parse(text, dialect=PgVector) if s is not None]
    except sqlglot.errors.ParseError as error:
        raise ConfigError(f"{path}: the schema cannot be parsed for template checking: {error}") from None
    finally:
        logger.setLevel(level)


def _apply(catalog: Catalog, statement: exp.Expr, path: Path) -> None:
    if isinstance(statement, exp.Create):
        kind = (statement.args.get("kind") or "").upper()
        if kind == "TABLE":
            _create_table(catalog, statement)
        elif kind == "VIEW":
            _create_view(catalog, statement, path)
        elif kind == "INDEX":
            _create_index(catalog, statement)
    elif isinstance(statement, exp.Alter) and (statement.args.get("kind") or "").upper() == "TABLE":
        _alter_table(catalog, statement)


def _create_table(catalog: Catalog, statement: exp.Create) -> None:
    schema = statement.this
    name = schema.this.name
    columns = [column.name for column in schema.expressions if isinstance(column, exp.ColumnDef)]
    catalog.columns[name] = tuple(columns)
    for column in schema.expressions:
        if isinstance(column, exp.ColumnDef) and any(
            isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in column.constraints
        ) or isinstance(column, exp.PrimaryKey):
            catalog.primary_keys[name] = f"{name}_pkey"


def _create_view(catalog: Catalog, statement: exp.Create, path: Path) -> None:
    name = statement.this.name
    select = statement.expression
    columns: list[str] = []
    for projection in select.expressions:
        if isinstance(projection, exp.Star):
            for table in select.find_all(exp.Table):
                columns.extend(catalog.columns.get(table.name, ()))
        elif projection.alias_or_name:
            columns.append(projection.alias_or_name)
        else:
            raise ConfigError(f"{path}: view {name} has an unnamed column; templates cannot check it")
    catalog.columns[name] = tuple(columns)


def _create_index(catalog: Catalog, statement: exp.Create) -> None:
    index = statement.this
    table = index.args.get("table")
    params = index.args.get("params")
    using = params.args.get("using") if params is not None else None
    if table is not None and using is not None and using.name.lower() == "hnsw":
        catalog.hnsw_indexes[table.name] = (*catalog.hnsw_indexes.get(table.name, ()), index.name)


def _alter_table(catalog: Catalog, statement: exp.Alter) -> None:
    name = statement.this.name
    columns = list(catalog.columns.get(name, ()))
    for action in statement.args.get("actions") or ():
        if isinstance(action, exp.ColumnDef):
            columns.append(action.name)
        elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "COLUMN":
            dropped = {column.name for column in action.args.get("tables") or ()}
            columns = [column for column in columns if column not in dropped]
        elif isinstance(action, exp.RenameColumn):
            old, new = action.this.name, action.args["to"].name
            columns = [new if column == old else column for column in columns]
    catalog.columns[name] = tuple(columns)
