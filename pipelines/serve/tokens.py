"""API tokens: a bearer secret that stands for a caller's scopes (sql_templates/schema/0080_api_tokens.sql).

A token is `lgt_<id>_<secret>`; only the SHA-256 of the whole text is stored. A token with scopes
makes every request a confined caller holding exactly those scopes (row security, signed scopes:
`Database.connection(scopes)`); an owner token (no scopes) reads every row and may write rows for
any scopes. The id is public (it names the token in `lanegraph token list|revoke`); the secret is
shown once, when the token is made.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pipelines.errors import InputError
from pipelines.resources.database import Database
from pipelines.resources.scopes import normalize_scopes

TOKEN_PREFIX = "lgt_"
MAX_NAME_CHARS = 200
MAX_TOKEN_CHARS = 200
# A verified token is trusted this long before the table is asked again: a find then costs no
# extra round trip, and a revocation takes effect within this many seconds.
VERIFIED_SECONDS = 5.0

INSERT_TOKEN = """
INSERT INTO lanegraph_api_token (id, name, secret_sha256, grant_scopes)
VALUES (%(id)s, %(name)s, %(digest)s, %(scopes)s)
RETURNING id, name, grant_scopes, created_at, revoked_at, last_used_at
"""
TOKENS = """
SELECT id, name, grant_scopes, created_at, revoked_at, last_used_at
FROM lanegraph_api_token ORDER BY created_at, id
"""
REVOKE_TOKEN = """
UPDATE lanegraph_api_token SET revoked_at = coalesce(revoked_at, now()) WHERE id = %(id)s RETURNING id
"""
# Looked up by the digest (unique), so the comparison happens in an index, not in Python.
USE_TOKEN = """
UPDATE lanegraph_api_token SET last_used_at = now()
WHERE secret_sha256 = %(digest)s AND revoked_at IS NULL
RETURNING id, name, grant_scopes, created_at, revoked_at, last_used_at
"""


@dataclass(frozen=True)
class ApiToken:
    id: str
    name: str
    # None: an owner token.
    scopes: tuple[str, ...] | None
    created_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None

    @property
    def is_owner(self) -> bool:
        return self.scopes is None

    def describe_scopes(self) -> str:
        if self.scopes is None:
            return "owner (every row)"
        return ",".join(self.scopes) if self.scopes else "public rows only"

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "owner": self.is_owner,
            "scopes": None if self.scopes is None else list(self.scopes),
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
            "last_used_at": self.last_used_at.isoformat() if self.last_used_at else None,
        }


def _token(row: Sequence) -> ApiToken:
    token_id, name, scopes, created_at, revoked_at, last_used_at = row
    return ApiToken(
        token_id, name, None if scopes is None else tuple(scopes), created_at, revoked_at, last_used_at
    )


def bearer_secret(authorization: str) -> str:
    """The token of an `Authorization: Bearer <token>` header; empty for any other header."""
    scheme, _, credentials = authorization.partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else ""


def digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def create_token(database: Database, name: str, scopes: Sequence[str] | None) -> tuple[ApiToken, str]:
    """A new token for `scopes` (None: an owner token); returns it and its secret, which is stored
    nowhere else."""
    if not name.strip() or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise InputError(f"token name must be 1-{MAX_NAME_CHARS} printable characters, got {name!r}")
    caller_scopes = None if scopes is None else list(normalize_scopes(scopes, "token scopes"))
    token_id = secrets.token_hex(6)
    secret = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    with database.connection() as connection:
        row = connection.execute(
            INSERT_TOKEN, {"id": token_id, "name": name, "digest": digest(secret), "scopes": caller_scopes}
        ).fetchone()
    assert row is not None, "INSERT ... RETURNING returns the row"
    return _token(row), secret


def list_tokens(database: Database) -> list[ApiToken]:
    with database.connection() as connection:
        return [_token(row) for row in connection.execute(TOKENS)]


def revoke_token(database: Database, token_id: str) -> None:
    with database.connection() as connection:
        if connection.execute(REVOKE_TOKEN, {"id": token_id}).fetchone() is None:
            raise InputError(f"no token with id {token_id!r}; `lanegraph token list` shows them")


class TokenVerifier:
    """Turns a presented secret into its token, or None for an unknown, revoked or malformed one.
    A verified token is remembered for `verified_seconds`."""

    def __init__(self, database: Database, verified_seconds: float = VERIFIED_SECONDS) -> None:
        self._database = database
        self._verified_seconds = verified_seconds
        self._lock = threading.Lock()
        self._verified: dict[bytes, tuple[ApiToken, float]] = {}

    def verify(self, secret: str) -> ApiToken | None:
        if not secret.startswith(TOKEN_PREFIX) or len(secret) > MAX_TOKEN_CHARS:
            return None
        key = digest(secret)
        now = time.monotonic()
        with self._lock:
            known = self._verified.get(key)
            if known is not None and now - known[1] < self._verified_seconds:
                return known[0]
        with self._database.connection() as connection:
            row = connection.execute(USE_TOKEN, {"digest": key}).fetchone()
        with self._lock:
            if row is None:
                self._verified.pop(key, None)
                return None
            token = _token(row)
            self._verified[key] = (token, now)
            return token
