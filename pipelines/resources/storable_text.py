"""Text a PostgreSQL text column can hold: no NUL character, and valid UTF-8, which a string holding
a lone surrogate (what JSON's `\\ud800` escape decodes to) is not."""

from __future__ import annotations


def unstorable_reason(text: str) -> str | None:
    """Why PostgreSQL cannot store `text`, as the end of a sentence about it, or None when it can."""
    if "\x00" in text:
        return "contains a NUL character, which PostgreSQL text cannot hold"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"holds a lone surrogate at character {error.start}"
    return None
