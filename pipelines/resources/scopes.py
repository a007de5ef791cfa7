"""Caller scopes: who may read which rows, enforced by PostgreSQL row-level security.

Every row carries `scopes text[]`; a caller reads a row only if it holds every scope of the row
(`row.scopes <@ caller scopes`, see sql_templates/schema/0040_row_security.sql; 0042 words the read
policy so the planner can estimate it and keeps the HNSW indexes for a confined caller).

A confined block is a connection of its own, logged in as the schema's login role for the caller
role and scope set (0051_confined_logins.sql, one login per scope set since 0090), reset when the
block ends and kept only for later blocks of the same role and scopes (`ConfinedConnections` in
database.py). Whatever a block does to its own login (its settings, its password, its backends)
reaches no other scope set's blocks, and the owner resets the login before it logs in again. The login holds no privileged role, so
`RESET ROLE`, `SET ROLE` and `SET SESSION AUTHORIZATION` lead nowhere privileged; its scopes are
published with a signature only the owner's key makes, bound to that backend, so `set_config` of
other scopes, or a signature seen in another session, leaves the session with no rows. Isolation so
holds for any statement run in the block, including SQL a caller wrote.

Who runs as what: find, `lanegraph find --scopes` and every fusion primitive run as the reader
with the caller's scopes. The write-side assets run as the owner: graph-wide steps (entity
resolution, BM25 statistics, communities, RAPTOR) must see every tenant's rows to compute anything,
and a derived row's scopes come from its sources, which the leak test checks through the reader
(tests/reliability/test_scopes.py). The writer role serves writes made on one caller's behalf: it
reads like the reader, may delete only non-public rows within its scopes, and writes only ids under
its scope set's prefix (0052_writer_id_prefix.sql), so a tenant can neither overwrite another
tenant's row nor publish a row to everyone, nor learn from a refusal that another tenant's id exists.

This module only names the logins and builds the statements; `Database.connection(scopes=...)`
opens the connection and runs them.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import psycopg
from psycopg import sql

from pipelines.errors import InputError

SCOPES_SETTING = "lanegraph.scopes"
SCOPES_SIGNATURE_SETTING = "lanegraph.scopes_signature"
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


@dataclass(frozen=True)
class ConfinedLogin:
    """The login a confined block connects as, and the key that signs its scopes (owner-only)."""

    caller_role: ScopedRole
    login: str
    password: str = field(repr=False)
    signing_key: bytes = field(repr=False)

    def conninfo(self, url: str) -> str:
        """`url` (host, database, options) logged in as this login, starting as the caller role."""
        options = psycopg.conninfo.conninfo_to_dict(url).get("options") or ""
        return psycopg.conninfo.make_conninfo(
            url,
            user=self.login,
            password=self.password,
            # As a startup setting the role is also what RESET ROLE returns to.
            options=f"{options} -c role={self.caller_role.value}".strip(),
        )

    def sign(self, backend_identity: str, scopes_text: str) -> str:
        """The signature lanegraph_caller_scopes() expects: SHA-256 keyed twice, so the outer hash
        of a fixed-length input stops a length extension of the inner one."""
        inner = hashlib.sha256(self.signing_key + f"{backend_identity}:{scopes_text}".encode()).digest()
        return hashlib.sha256(self.signing_key + inner).hexdigest()


# Run by the owner before a new confined connection logs in: the login of one caller role and scope
# set, made on first use, its own settings reset (0090_confined_blocks_change_no_shared_state.sql).
CONFINED_LOGIN_FOR = "SELECT login, password, signing_key FROM lanegraph_confined_login_for(%s, %s, %s)"
# What a signature over values in a block covers: the backend, and the values as the server prints them.
BLOCK_SIGNING_INPUT = "SELECT lanegraph_backend_identity(), session_user, %s::text[]::text"
# The scopes as the server prints the array, which is the text the signature covers.
PUBLISH_SCOPES = sql.SQL(
    "SELECT set_config({setting}, %s::text[]::text, false), lanegraph_backend_identity()"
).format(setting=sql.Literal(SCOPES_SETTING))
# pgvector's iterative index scan is switched on because the policy filters rows after the HNSW
# scan: without it a tenant owning a small share of the rows gets the tenant-filtered remainder of
# the first `hnsw.ef_search` candidates, often nothing. Versions before 0.8 lack the setting.
SIGN_SCOPES = sql.SQL(
    "SELECT set_config({setting}, %s, false), "
    "CASE WHEN (SELECT string_to_array(extversion, '.')::int[] >= '{{0,8}}' "
    "FROM pg_extension WHERE extname = 'vector') "
    "THEN set_config('hnsw.iterative_scan', 'strict_order', false) END"
).format(setting=sql.Literal(SCOPES_SIGNATURE_SETTING))
