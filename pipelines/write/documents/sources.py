"""Source files and the documents in them: markdown and text files (one document each) and JSONL files
(one document per line: `id, title, text, uri, observed_at, expires_at, scopes`; a conversation's
turns, one per line or a chat log of messages per line, as `conversations.py` reads them).

Reading never raises on bad content: a binary, empty, oversized or non-UTF-8 file, or a malformed
JSONL line, becomes a `Problem` naming the file (and line) and the reason, and the rest is read.

Identity: a file's source key is its folder's name plus its path inside that folder
("documents/project-heron.md"), the same on every machine that holds the corpus; a markdown or text
document takes its source's key as id. A JSONL document's id is its `id`, else its `uri`, else a
hash of its text, so the same corpus gets the same ids in every database.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pipelines.errors import InputError, first_line_of
from pipelines.resources.scopes import normalize_row_scopes
from pipelines.write.documents.conversations import (
    TURN_FIELDS,
    Turn,
    TurnNumbering,
    chat_messages,
    is_chat_record,
    is_turn_record,
    record_turn,
)
from pipelines.write.documents.record_fields import optional_text, optional_time
from pipelines.write.report import Problem

SOURCE_KINDS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".jsonl": "jsonl"}
JSONL_FIELDS = ("id", "title", "text", "uri", "observed_at", "expires_at", "scopes", *TURN_FIELDS)
# A document whose text is only its title heading would have no chunk: nothing to find it by.
NO_TEXT = "no text besides the title; a document needs text to be chunked and found"
# A markdown title is the first level-1 ATX heading; closing #s are decoration.
_H1 = re.compile(r"^#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class SourceFile:
    key: str
    path: Path
    kind: str


@dataclass(frozen=True)
class SourceDocument:
    id: str
    title: str
    body: str
    uri: str | None = None
    observed_at: datetime | None = None
    expires_at: datetime | None = None
    scopes: tuple[str, ...] = ()
    # Set when the document is one turn of a conversation.
    turn: Turn | None = None

    @property
    def content_hash(self) -> str:
        """Changes whenever anything stored about the document changes, scopes included."""
        fields: list[object] = [
            self.title,
            self.body,
            self.uri,
            self.observed_at.isoformat() if self.observed_at else None,
            self.expires_at.isoformat() if self.expires_at else None,
            list(self.scopes),
        ]
        if self.turn is not None:
            fields.append([self.turn.conversation, self.turn.session, self.turn.speaker, self.turn.position])
        return sha256_text(json.dumps(fields, ensure_ascii=False))


@dataclass(frozen=True)
class SourceRead:
    """What one source file holds now: its documents, what was skipped, and the bytes' hash."""

    documents: tuple[SourceDocument, ...]
    problems: tuple[Problem, ...]
    file_hash: str | None
    # True when nothing of the file could be read (binary, too large, ...): its documents stay as
    # they were rather than being retracted because of a damaged copy.
    unreadable: bool = False


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_signature(path: Path) -> str:
    status = path.stat()
    return f"{status.st_size}:{status.st_mtime_ns}"


def source_key(root: Path, path: Path) -> str:
    """`<root folder name>/<path inside it>`; a single file is keyed inside its parent folder."""
    return f"{root.name}/{path.relative_to(root).as_posix()}"


def discover_sources(path: Path) -> tuple[list[SourceFile], list[Problem]]:
    """The supported files of a folder (recursively, hidden entries left out) or one file."""
    path = path.expanduser().resolve()
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_file():
        kind = SOURCE_KINDS.get(path.suffix.lower())
        if kind is None:
            raise InputError(f"{path}: unsupported file type; expected {', '.join(SOURCE_KINDS)}")
        return [SourceFile(source_key(path.parent, path), path, kind)], []
    sources, ignored = [], []
    for file in _visible_files(path, set(), set()):
        kind = SOURCE_KINDS.get(file.suffix.lower())
        if kind is None:
            ignored.append(Problem(str(file), f"unsupported file type; expected {', '.join(SOURCE_KINDS)}"))
        else:
            sources.append(SourceFile(source_key(path, file), file, kind))
    return sources, ignored


def _visible_files(folder: Path, folders_seen: set[Path], files_seen: set[Path]) -> Iterator[Path]:
    """Files in path order, each real file once: a symbolic link back into the folder (a loop) or to
    a file already listed adds nothing."""
    folders_seen.add(folder.resolve())
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        real = entry.resolve()
        if entry.is_dir():
            if real not in folders_seen:
                yield from _visible_files(entry, folders_seen, files_seen)
        elif entry.is_file() and real not in files_seen:
            files_seen.add(real)
            yield entry


def without_title_heading(body: str, title: str) -> str:
    """The body without its opening `# Title` line: the title is prefixed to every chunk anyway."""
    stripped = body.lstrip()
    first_line, _, rest = stripped.partition("\n")
    if first_line.startswith("#") and first_line.lstrip("#").strip().rstrip("#").strip() == title:
        return rest
    return body


def markdown_title(text: str) -> str | None:
    match = _H1.search(text)
    return match.group(1).strip() if match else None


def size_refusal(source: SourceFile, size: int, max_bytes: int) -> str | None:
    """Why a file is too large to read whole (a JSONL file is read line by line, each line checked)."""
    if source.kind != "jsonl" and size > max_bytes:
        return f"{size:,} bytes is over pipeline.documents.max_bytes ({max_bytes:,})"
    return None


def content_refusal(data: bytes) -> str | None:
    """Why nothing of a file's bytes can be a document: binary, not UTF-8, or empty."""
    if b"\x00" in data:
        return "binary file (contains NUL bytes)"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return f"invalid UTF-8 at byte {error.start}"
    if not text.strip():
        return "empty file"
    return None


def refusal(source: SourceFile, max_bytes: int) -> str | None:
    """Why a source file cannot be read at all, or None: registration refuses such a file, so it
    never becomes a partition and triggers no run."""
    size = source.path.stat().st_size
    return size_refusal(source, size, max_bytes) or content_refusal(source.path.read_bytes())


def read_source(source: SourceFile, max_bytes: int) -> SourceRead:
    """Every document of one source file, with a `Problem` for each part that could not be used."""
    try:
        size = source.path.stat().st_size
    except FileNotFoundError:
        return SourceRead((), (), None)
    location = str(source.path)
    if reason := size_refusal(source, size, max_bytes):
        return _unreadable(location, reason)
    data = source.path.read_bytes()
    file_hash = hashlib.sha256(data).hexdigest()
    if reason := content_refusal(data):
        return _unreadable(location, reason, file_hash)
    text = data.decode("utf-8-sig")
    if source.kind == "jsonl":
        documents, problems = _jsonl_documents(text, location, max_bytes)
        return SourceRead(tuple(documents), tuple(problems), file_hash)
    title = (markdown_title(text) if source.kind == "markdown" else None) or source.path.stem
    if not without_title_heading(text, title).strip():
        return _unreadable(location, NO_TEXT, file_hash)
    document = SourceDocument(id=source.key, title=title, body=text, uri=source.path.as_uri())
    return SourceRead((document,), (), file_hash)


def _unreadable(location: str, reason: str, file_hash: str | None = None) -> SourceRead:
    return SourceRead((), (Problem(location, reason),), file_hash, unreadable=True)


def _jsonl_documents(text: str, location: str, max_bytes: int) -> tuple[list[SourceDocument], list[Problem]]:
    documents: list[SourceDocument] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    numbering = TurnNumbering()
    # Records end at \n only: str.splitlines also splits at U+2028, U+2029, U+0085 and other
    # separators that JSON allows raw inside a string.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        where = f"{location}:{number}"
        if len(line.encode("utf-8")) > max_bytes:
            problems.append(Problem(where, f"record is over pipeline.documents.max_bytes ({max_bytes:,})"))
            continue
        try:
            read = jsonl_documents(line, numbering)
        except InputError as error:
            problems.append(Problem(where, str(error)))
            continue
        # Reading one record is pure computation over that record: whatever else it raises is
        # the record's fault, and the file's other records still land.
        except Exception as error:  # noqa: BLE001
            problems.append(Problem(where, f"unreadable record ({type(error).__name__}: {first_line_of(error)})"))
            continue
        for document in read:
            if document.id in first_line:
                problems.append(Problem(where, f"duplicate id {document.id!r} (first on line {first_line[document.id]})"))
                continue
            first_line[document.id] = number
            documents.append(document)
    return documents, problems


def jsonl_documents(line: str, numbering: TurnNumbering | None = None) -> list[SourceDocument]:
    """The documents of one JSONL record (one, or a chat log's turns); an `InputError` names the
    field at fault. `numbering` carries turn numbers from the file's earlier lines."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(f"invalid JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply") from None
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object, got {type(record).__name__}")
    numbering = numbering or TurnNumbering()
    if is_chat_record(record):
        return _chat_documents(record, numbering)
    unknown = sorted(set(record) - set(JSONL_FIELDS))
    if unknown:
        # A misspelt `scopes` would otherwise publish a private document to every tenant.
        raise InputError(f"unknown field {unknown[0]!r}; expected {', '.join(JSONL_FIELDS)} (or messages)")
    text = optional_text(record, "text")
    if not text or not text.strip():
        raise InputError("field 'text' is missing or empty")
    turn = record_turn(record, numbering) if is_turn_record(record) else None
    uri = optional_text(record, "uri")
    document_id = optional_text(record, "id") or uri or (turn.default_id if turn else f"sha256:{sha256_text(text)[:32]}")
    title = optional_text(record, "title") or (turn.default_title if turn else markdown_title(text)) or document_id
    if not turn and not without_title_heading(text, title).strip():
        raise InputError(f"field 'text': {NO_TEXT}")
    return [
        SourceDocument(
            id=document_id,
            title=title,
            body=turn.spoken(text) if turn else text,
            uri=uri,
            observed_at=optional_time(record, "observed_at"),
            expires_at=optional_time(record, "expires_at"),
            scopes=_scopes(record),
            turn=turn,
        )
    ]


def _chat_documents(record: dict, numbering: TurnNumbering) -> list[SourceDocument]:
    messages = chat_messages(record, numbering)
    observed_at = optional_time(record, "observed_at")
    scopes = _scopes(record)
    return [
        SourceDocument(
            id=message.turn.default_id,
            title=message.turn.default_title,
            body=message.turn.spoken(message.text),
            observed_at=message.said_at or observed_at,
            scopes=scopes,
            turn=message.turn,
        )
        for message in messages
    ]


def _scopes(record: dict) -> tuple[str, ...]:
    """The record's scopes as a caller must spell them: a scope no caller can present would leave
    the document unreadable to everyone but the owner."""
    value = record.get("scopes")
    if value is None:
        return ()
    return normalize_row_scopes(value, "field 'scopes'")
