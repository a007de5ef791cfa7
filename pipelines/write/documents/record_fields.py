"""Typed fields of a JSONL record, each refusal naming the field (`messages[2].content` inside a
nested object), so a bad line is reported and the file's other lines still land."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from pipelines.errors import InputError
from pipelines.resources.storable_text import unstorable_reason


def field_name(field: str, within: str = "") -> str:
    return f"{within}.{field}" if within else field


def optional_text(record: Mapping[str, object], field: str, within: str = "") -> str | None:
    value = record.get(field)
    name = field_name(field, within)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"field {name!r} must be a string, got {type(value).__name__}")
    if reason := unstorable_reason(value):
        raise InputError(f"field {name!r} {reason}")
    return value


def optional_time(record: Mapping[str, object], field: str, within: str = "") -> datetime | None:
    value = optional_text(record, field, within)
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"field {field_name(field, within)!r} is not an ISO 8601 time: {value!r}") from None
    # A time without a zone is read as UTC rather than as this machine's local time.
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def optional_label(record: Mapping[str, object], field: str, within: str = "") -> str | None:
    """A name-like field (a conversation, session or speaker): text or a whole number, trimmed;
    blank is absent."""
    value = record.get(field)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, bool) or (value is not None and not isinstance(value, str)):
        name = field_name(field, within)
        raise InputError(f"field {name!r} must be a string or a whole number, got {type(value).__name__}")
    text = optional_text(record, field, within)
    return text.strip() or None if text is not None else None
