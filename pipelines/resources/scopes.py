"""Caller scopes: who may read which rows, enforced by PostgreSQL row-level security.

Every row carries `scopes text[]`; a caller reads a row only if it holds every scope of the row
(`row.scopes <@ caller scopes`, see sql_templates/schema/0040_row_security.sql; 0042 words the read
policy so the planner can estimate it and keeps the HNSW indexes for a confined caller). A scoped
transaction switches to a non-owner role and publishes the caller's scopes in a transaction-local
setting the policies read, so a statement cannot see other tenants' rows whatever its WHERE says.

Who runs as what: find, `lanegraph find --scopes` and every fusion primitive run as the reader
with the caller's scopes. The write-side assets run as the owner: graph-wide steps (entity
resolution, BM25 statistics, communities, RAPTOR) must see every tenant's rows to compute anything,
and a derived row's scopes come from its sources, which the leak test checks through the reader
(tests/reliability/test_scopes.py). The writer role serves writes made on one caller's behalf: it
reads like the reader and may change only non-public rows within its scopes, so a tenant can neither
overwrite another tenant's row of the same id nor publish a row to everyone.

This module only builds the statements; `Database.connection(scopes=...)` runs them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from enum import StrEnum

from psycopg import sql

from pipelines.errors import InputError

SCOPES_SETTING = "lanegraph.scopes"
MAX_SCOPE_CHARS = 200
MAX_SCOPES = 1000
# A stored row's scope set is also part of btree keys (BM25 statistics per scope set, entities per
# scope set), and PostgreSQL refuses an index entry over 2,704 bytes: the set's bytes, counted with
# each element's array overhead, stay well below that.
MAX_ROW_SCOPE_BYTES = 2000
ARRAY_ELEMENT_OVERHEAD = 8


class ScopedRole(StrEnum):
    """The non-owner roles a scoped transaction runs as."""

    # find, the fusion primitives and fact-access recording: read rows within the scopes.
    READER = "lanegraph_reader"
    # Writes on a caller's behalf: may read, insert, update and delete only rows within the scopes.
    WRITER = "lanegraph_writer"


def _check_scope(scope: object, position: int, source: str) -> str:
    if not isinstance(scope, str):
        raise InputError(f"{source}: scope {position + 1} is {type(scope).__name__}, not text")
    if not scope or scope != scope.strip():
        raise InputError(f"{source}: scope {position + 1} ({scope!r}) is empty or has surrounding spaces")
    if len(scope) > MAX_SCOPE_CHARS:
        raise InputError(f"{source}: scope {position + 1} is longer than {MAX_SCOPE_CHARS} characters")
    if any(unicodedata.category(character).startswith("C") for character in scope):
        raise InputError(f"{source}: scope {position + 1} ({scope!r}) contains control characters")
    return scope


def normalize_scopes(scopes: Sequence[str], source: str = "scopes") -> tuple[str, ...]:
    """The caller's scopes, checked, deduplicated and sorted; an empty set reads only public rows."""
    # A bare string is a Sequence[str] too, and would silently become one scope per character.
    if isinstance(scopes, (str, bytes)) or not isinstance(scopes, Sequence):
        raise InputError(f"{source}: expected a list of scopes, got {type(scopes).__name__}")
    if len(scopes) > MAX_SCOPES:
        raise InputError(f"{source}: {len(scopes)} scopes given; at most {MAX_SCOPES} are allowed")
    return tuple(sorted({_check_scope(scope, i, source) for i, scope in enumerate(scopes)}))


def normalize_row_scopes(scopes: object, source: str = "scopes") -> tuple[str, ...]:
    """The scopes a stored row may carry: those a caller can present (`normalize_scopes`), few
    enough to be part of an index key."""
    normalized = normalize_scopes(scopes, source)  # type: ignore[arg-type]
    size = sum(len(scope.encode()) + ARRAY_ELEMENT_OVERHEAD for scope in normalized)
    if size > MAX_ROW_SCOPE_BYTES:
        raise InputError(
            f"{source}: {len(normalized)} scopes take {size:,} bytes; a row's scopes may take at most "
            f"{MAX_ROW_SCOPE_BYTES:,}"
        )
    return normalized


def parse_scopes(text: str, source: str = "--scopes") -> tuple[str, ...]:
    """Scopes written as `a,b` on a command line; an empty string means public rows only."""
    if not text.strip():
        return ()
    return normalize_scopes([part.strip() for part in text.split(",")], source)


def enter_scopes_statements(scopes: Sequence[str], role: ScopedRole) -> list[tuple[sql.Composable, tuple]]:
    """Statements (with their parameters) that confine the current transaction to `scopes` as `role`.

    `SET LOCAL` and `set_config(..., true)` end with the transaction, so a pooled connection goes
    back to the pool as the owner with no scopes. pgvector's iterative index scan is switched on
    because the policy filters rows after the HNSW scan: without it a tenant owning a small share
    of the rows gets the tenant-filtered remainder of the first `hnsw.ef_search` candidates, often
    nothing. Versions before 0.8 lack the setting and keep their old behaviour.
    """
    caller_scopes = normalize_scopes(scopes)
    return [
        (sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role.value)), ()),
        (
            sql.SQL(
                "SELECT set_config({setting}, %s::text[]::text, true), "
                "CASE WHEN (SELECT string_to_array(extversion, '.')::int[] >= '{{0,8}}' "
                "FROM pg_extension WHERE extname = 'vector') "
                "THEN set_config('hnsw.iterative_scan', 'strict_order', true) END"
            ).format(setting=sql.Literal(SCOPES_SETTING)),
            (list(caller_scopes),),
        ),
    ]
