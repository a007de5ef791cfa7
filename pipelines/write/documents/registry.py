"""The source registry: which files the per-document assets read, keyed by their partition key.

Registering a folder records every supported file (new, changed or unchanged by its bytes' hash)
and marks files that disappeared from it as missing; the documents asset then reads each registered
source and retracts the documents of missing ones. Only files whose size or modification time moved
are hashed again, so registering an unchanged corpus costs one `stat` per file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pipelines.write.documents import document_sql as q
from pipelines.write.documents.sources import discover_sources, file_sha256, file_signature, refusal
from pipelines.write.report import Problem
from pipelines.resources.rows import one_row


@dataclass
class Registration:
    """What registering a path found, by source key."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # Files in the folder that are not sources (unsupported types) or cannot be read at all.
    ignored: list[Problem] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        """Every source of the path, the removed ones included."""
        return sorted({*self.added, *self.changed, *self.removed, *self.unchanged})

    @property
    def affected(self) -> list[str]:
        return sorted({*self.added, *self.changed, *self.removed})


def register_path(connection: psycopg.Connection, path: Path, max_bytes: int) -> Registration:
    """Register the sources of a folder or file in the caller's transaction. A new or changed file
    that cannot be read at all (binary, not UTF-8, empty, over `max_bytes`) is refused with its
    reason: it becomes no partition, and a known file keeps its earlier documents."""
    sources, ignored = discover_sources(path)
    registration = Registration(ignored=ignored)
    folder = path.expanduser().resolve()
    folder_prefix = f"{folder}/" if folder.is_dir() else None
    known = {
        key: (stored_path, signature, registered_hash, missing_since)
        for key, stored_path, signature, registered_hash, missing_since in connection.execute(
            q.REGISTERED_SOURCES,
            {"keys": [source.key for source in sources], "folder_prefix": folder_prefix},
        )
    }
    for source in sources:
        signature = file_signature(source.path)
        stored = known.get(source.key)
        same_file = stored is not None and stored[0] == str(source.path) and stored[3] is None
        if stored is not None and same_file and stored[1] == signature:
            registration.unchanged.append(source.key)
            continue
        if reason := refusal(source, max_bytes):
            registration.ignored.append(Problem(str(source.path), reason))
            if stored is not None:
                registration.unchanged.append(source.key)
            continue
        file_hash = file_sha256(source.path)
        if stored is None:
            registration.added.append(source.key)
        elif same_file and stored[2] == file_hash:
            registration.unchanged.append(source.key)
        else:
            registration.changed.append(source.key)
        connection.execute(
            q.REGISTER_SOURCE,
            {
                "key": source.key,
                "path": str(source.path),
                "kind": source.kind,
                "signature": signature,
                "registered_hash": file_hash,
            },
        )
    if folder_prefix is not None:
        present = {source.key for source in sources}
        gone = sorted(
            key for key, (stored_path, *_) in known.items()
            if key not in present and stored_path.startswith(folder_prefix)
        )
        connection.execute(q.MARK_SOURCES_MISSING, {"keys": gone})
        registration.removed = [key for key in gone if known[key][3] is None]
        registration.unchanged += [key for key in gone if known[key][3] is not None]
    return registration


def unfinished_sources(connection: psycopg.Connection, keys: Sequence[str]) -> dict[str, str | None]:
    """Sources whose current bytes (hash given; None when the file is gone) the documents asset has
    not processed yet: new, changed and removed files, and any whose last run failed."""
    return dict(connection.execute(q.UNFINISHED_SOURCES, {"keys": list(keys)}).fetchall())


def source_bytes(connection: psycopg.Connection, keys: Sequence[str]) -> int:
    """The size of the given sources' files when last registered: how much work a run over them is."""
    return int(one_row(connection.execute(q.SOURCE_BYTES, {"keys": list(keys)}), "the sources' sizes")[0])


def partition_documents(connection: psycopg.Connection, partition_keys: Sequence[str]) -> dict[str, str]:
    """The documents of the given partitions (live and retracted), id -> partition key, in id order:
    what a partitioned asset of the per-document group works on."""
    return dict(connection.execute(q.PARTITION_DOCUMENTS, {"keys": list(partition_keys)}).fetchall())
