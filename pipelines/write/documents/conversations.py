"""Conversation records: each turn of a dialogue (or of a user's chat with an assistant) becomes a
document of its own, keeping who said it, in which conversation and session, and where it stands.

Two JSONL shapes are read:
- one turn per line: `conversation`, `speaker`, `text`, and optionally `session`, `turn`,
  `observed_at` (when it was said), `id`, `title`, `uri`, `expires_at`, `scopes`;
- a chat log per line, the shape chat APIs export: `messages`, each with `content` (text, or a
  list of parts with `text`), `name` or `role` (the speaker: a name beats a role) and optionally
  `timestamp`; beside them `conversation` (else the line's `id`), `session`, `observed_at` (the
  time of the messages without a timestamp) and `scopes`.

A turn without a `turn` number takes the next one of its (conversation, session) in the file, so a
transcript needs no numbering; its id is then `<conversation>:<session>:<turn>` (no session part
without a session), the same in every
database. Its text is stored as transcripts write it, `Speaker: text`, so the speaker reaches the
BM25 index, the embedding and every line that shows the turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from pipelines.errors import InputError
from pipelines.write.documents.record_fields import optional_label, optional_text, optional_time

TURN_FIELDS = ("conversation", "session", "speaker", "turn")
CHAT_FIELDS = ("id", "conversation", "session", "observed_at", "scopes", "messages")
MESSAGE_FIELDS = ("role", "name", "content", "timestamp")


@dataclass(frozen=True)
class Turn:
    conversation: str
    session: str
    speaker: str
    position: int

    @property
    def default_id(self) -> str:
        return ":".join((self.conversation, *([self.session] if self.session else []), str(self.position)))

    @property
    def default_title(self) -> str:
        return f"{self.conversation}, session {self.session}" if self.session else self.conversation

    def spoken(self, text: str) -> str:
        """The turn as a transcript line: `Speaker: text`, unless the text already starts so."""
        prefix = f"{self.speaker}:"
        return text if text.startswith(prefix) else f"{prefix} {text}"


@dataclass
class TurnNumbering:
    """The last turn number of each (conversation, session) met in one file."""

    last: dict[tuple[str, str], int] = field(default_factory=dict)

    def number(self, conversation: str, session: str, given: int | None) -> int:
        key = (conversation, session)
        position = given if given is not None else self.last.get(key, 0) + 1
        self.last[key] = max(self.last.get(key, 0), position)
        return position


@dataclass(frozen=True)
class Message:
    turn: Turn
    text: str
    said_at: datetime | None


def is_turn_record(record: Mapping[str, object]) -> bool:
    return any(name in record for name in TURN_FIELDS)


def is_chat_record(record: Mapping[str, object]) -> bool:
    return "messages" in record


def record_turn(record: Mapping[str, object], numbering: TurnNumbering) -> Turn:
    """The turn a one-turn record describes."""
    conversation = optional_label(record, "conversation")
    speaker = optional_label(record, "speaker")
    for name, value in (("conversation", conversation), ("speaker", speaker)):
        if value is None:
            raise InputError(f"field {name!r} is missing or empty; a turn needs its conversation and speaker")
    assert conversation is not None and speaker is not None
    session = optional_label(record, "session") or ""
    return Turn(conversation, session, speaker, numbering.number(conversation, session, _turn_number(record)))


def chat_messages(record: Mapping[str, object], numbering: TurnNumbering) -> list[Message]:
    """A chat log's messages with text, in order, each a turn."""
    unknown = sorted(set(record) - set(CHAT_FIELDS))
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r}; a chat record has {', '.join(CHAT_FIELDS)}")
    conversation = optional_label(record, "conversation") or optional_label(record, "id")
    if conversation is None:
        raise InputError("field 'conversation' is missing or empty; a chat record needs it (or an 'id')")
    session = optional_label(record, "session") or ""
    messages = record["messages"]
    if not isinstance(messages, list) or not messages:
        raise InputError("field 'messages' must be a non-empty list of messages")
    read = []
    for index, message in enumerate(messages):
        within = f"messages[{index}]"
        if not isinstance(message, dict):
            raise InputError(f"field {within!r} must be an object with a role or name, and content")
        unknown = sorted(set(message) - set(MESSAGE_FIELDS))
        if unknown:
            raise InputError(f"unknown field '{within}.{unknown[0]}'; a message has {', '.join(MESSAGE_FIELDS)}")
        speaker = optional_label(message, "name", within) or optional_label(message, "role", within)
        if speaker is None:
            raise InputError(f"field {within!r} has neither a name nor a role")
        text = _content(message, within)
        said_at = optional_time(message, "timestamp", within)
        if text.strip():
            turn = Turn(conversation, session, speaker, numbering.number(conversation, session, None))
            read.append(Message(turn, text, said_at))
    if not read:
        raise InputError("field 'messages' holds no message with text")
    return read


def _turn_number(record: Mapping[str, object]) -> int | None:
    value = record.get("turn")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**31:
        raise InputError("field 'turn' must be a whole number from 0 to 2147483647")
    return value


def _content(message: Mapping[str, object], within: str) -> str:
    value = message.get("content")
    if isinstance(value, list):
        parts = [
            optional_text(part, "text", f"{within}.content[{index}]") if isinstance(part, dict) else None
            for index, part in enumerate(value)
        ]
        if all(isinstance(part, str) for part in parts):
            return "\n".join(part for part in parts if part)
    elif isinstance(value, str):
        return optional_text(message, "content", within) or ""
    raise InputError(f"field '{within}.content' must be text or a list of parts with text")
