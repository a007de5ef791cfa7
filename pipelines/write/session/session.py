"""Working memory: session items loaded with embeddings, and promoted to documents once old enough.

`load_session_items(path, ...)` reads a JSONL file (`id, text, created_at, scopes` per line) into
`session_item` with embeddings; the working_memory lane finds unpromoted items by vector. An item
older than `promote_after_hours` is promoted: written as a one-line JSONL source
(`<data dir>/session/…`, document id `session:<item id>`) that one run carries through the
per-document assets like any other source (the `hourly_session_promotion` sensor requests it), then
marked `promoted_at` so the lane stops returning it: from then on the document lanes find it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pydantic

from pipelines.config import data_dir
from pipelines.resources.database import Database
from pipelines.resources.scopes import ScopedRole
from pipelines.resources.embedder import Embedder
from pipelines.errors import InputError
from pipelines.resources.scopes import normalize_row_scopes
from pipelines.write.session import session_sql as q
from pipelines.resources.rows import one_row

DOCUMENT_PREFIX = "session:"
_UNSAFE_FILE_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]+")


def session_sources_dir() -> Path:
    return data_dir() / "session"


class SessionItemRecord(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=False)

    id: str = pydantic.Field(min_length=1)
    text: str = pydantic.Field(min_length=1)
    created_at: datetime | None = None
    scopes: list[str] = []

    @pydantic.field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("is blank")
        return text

    @pydantic.field_validator("scopes")
    @classmethod
    def _scopes_a_caller_can_present(cls, scopes: list[str]) -> list[str]:
        try:
            return list(normalize_row_scopes(scopes))
        except InputError as error:
            raise ValueError(str(error)) from None

    @pydantic.field_validator("created_at")
    @classmethod
    def _utc_when_unzoned(cls, moment: datetime | None) -> datetime | None:
        # A time without a zone is read as UTC rather than as this machine's local time.
        return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def read_session_items(path: Path) -> list[SessionItemRecord]:
    """Every record of a session-items JSONL file; the first bad line is an error naming it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read session items: {error}") from None
    records: dict[str, SessionItemRecord] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = SessionItemRecord.model_validate_json(line)
        except pydantic.ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "line"
            raise InputError(f"{path}:{number}: {where}: {first['msg']}") from None
        if record.id in records:
            raise InputError(f"{path}:{number}: id: duplicate id {record.id!r}")
        records[record.id] = record
    return list(records.values())


@dataclass
class SessionLoad:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0


def load_session_items(path: Path, *, database: Database, embedder: Embedder) -> SessionLoad:
    """Upsert the file's items with embeddings of their text; promoted items are left as they are."""
    records = read_session_items(Path(path))
    with database.connection() as connection:
        stored = {
            item_id: (text, scopes, promoted)
            for item_id, text, scopes, promoted in connection.execute(q.STORED_ITEMS, {"ids": [r.id for r in records]})
        }
    changed = [
        record for record in records
        if record.id not in stored or (not stored[record.id][2] and stored[record.id][:2] != (record.text, sorted(set(record.scopes))))
    ]
    load = SessionLoad(unchanged=len(records) - len(changed))
    vectors: Iterable[object] = embedder.embed([record.text for record in changed]) if changed else []
    with database.connection() as connection:
        for record, vector in zip(changed, vectors):
            connection.execute(q.UPSERT_ITEM, {
                "id": record.id, "text": record.text, "embedding": vector, "created_at": record.created_at,
                "scopes": sorted(set(record.scopes)),
            })
            if record.id in stored:
                load.updated += 1
            else:
                load.inserted += 1
    return load


CALLER_ID_PREFIX = "SELECT lanegraph_caller_id_prefix()"


def caller_id_prefix(connection: psycopg.Connection) -> str:
    """The prefix every id a confined writer writes must start with (0052_writer_id_prefix.sql)."""
    row = connection.execute(CALLER_ID_PREFIX).fetchone()
    assert row is not None and row[0] is not None, "a confined writer's signed scopes give it a prefix"
    return row[0]


@dataclass(frozen=True)
class RememberedItem:
    id: str
    scopes: tuple[str, ...]
    created_at: datetime
    inserted: bool


def remember_item(
    database: Database,
    record: SessionItemRecord,
    *,
    embedder: Embedder,
    caller_scopes: Sequence[str] | None = None,
) -> RememberedItem:
    """Put one item into working memory, embedded, so find's working_memory lane returns it at once
    (and the promotion sensor later makes it a document).

    With `caller_scopes` it is written as that confined writer: the item's scopes must be a
    non-empty subset of them (row security refuses a public row or another tenant's), and its id
    is put under the writer's id prefix (0052_writer_id_prefix.sql), so one tenant's ids never
    meet another's. Without, it is written as the owner, id and scopes as given."""
    scopes = sorted(set(record.scopes))
    if caller_scopes is not None:
        outside = sorted(set(scopes) - set(caller_scopes))
        if outside:
            raise InputError(f"scopes: {', '.join(outside)} not among the caller's scopes")
        if not scopes:
            raise InputError("scopes: a caller with scopes writes items under at least one of them; public items are the owner's")
    vector = embedder.embed([record.text])[0]
    with database.connection(caller_scopes, role=ScopedRole.WRITER) as connection:
        prefix = caller_id_prefix(connection) if caller_scopes is not None else ""
        item_id = record.id if record.id.startswith(prefix) else prefix + record.id
        existed = connection.execute(q.STORED_ITEMS, {"ids": [item_id]}).fetchone() is not None
        written = connection.execute(q.REMEMBER_ITEM, {
            "id": item_id, "text": record.text, "embedding": vector, "created_at": record.created_at,
            "scopes": scopes,
        }).fetchone()
    if written is None:
        raise InputError(f"id: item {item_id!r} was already promoted to a document; give a new id")
    return RememberedItem(item_id, tuple(scopes), written[0], inserted=not existed)


def source_file_name(item_id: str) -> str:
    """A file name per item that no id can collide with or escape the folder through."""
    readable = _UNSAFE_FILE_CHARACTERS.sub("_", item_id)[:60]
    return f"{readable}-{hashlib.sha256(item_id.encode()).hexdigest()[:12]}.jsonl"


def write_session_source(folder: Path, item_id: str, text: str, created_at: datetime, scopes: Sequence[str]) -> Path:
    path = folder / source_file_name(item_id)
    record = {
        "id": DOCUMENT_PREFIX + item_id,
        "title": f"Session note {item_id}",
        "text": text,
        "observed_at": created_at.isoformat(),
        "scopes": list(scopes),
    }
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


@dataclass
class Promotion:
    promoted: list[str] = field(default_factory=list)
    young: int = 0


def write_due_items(database: Database, *, older_than_hours: float, folder: Path | None = None) -> Path:
    """Write every unpromoted item older than the threshold as a source file of `folder` (the
    session sources folder by default), which is returned for registering like any other source."""
    folder = folder or session_sources_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with database.connection() as connection:
        due = connection.execute(q.DUE_ITEMS, {"hours": older_than_hours}).fetchall()
    for item in due:
        write_session_source(folder, *item)
    return folder


def mark_promoted(database: Database, *, older_than_hours: float) -> Promotion:
    """Mark the due items whose documents have landed as promoted, so the working_memory lane stops
    returning them; an item whose document failed stays in working memory."""
    with database.connection() as connection:
        due = [item_id for item_id, *_ in connection.execute(q.DUE_ITEMS, {"hours": older_than_hours})]
        young = one_row(connection.execute(q.YOUNG_ITEM_COUNT, {"hours": older_than_hours}), "the young items")[0]
        promoted = [
            item_id for (item_id,) in connection.execute(q.MARK_PROMOTED, {"ids": due, "prefix": DOCUMENT_PREFIX})
        ]
    return Promotion(promoted=promoted, young=young)
