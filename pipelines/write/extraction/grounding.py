"""Where facts may come from in a chunk, and which dates bound them.

Extraction reads prose paragraphs only: markdown headings are labels, not claims. Validity comes
from ISO dates introduced by a clear preposition ("since 2025-04-01", "from ... until ...",
"as of ...", "paused on ..."); a sentence without one yields facts with open validity.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

ISO_DATE = r"\d{4}-\d{2}-\d{2}"
_DATED = re.compile(rf"\b(since|from|as of|between|on|until|till|to|and)\s+({ISO_DATE})\b", re.IGNORECASE)
_STARTS = {"since", "from", "as of", "between"}
_ENDS = {"until", "till"}
# "to" and "and" end a range only right after its start ("from A to B", "between A and B").
_RANGE_ENDS = {"to", "and"}
_HEADING = re.compile(r"^\s*#")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


@dataclass(frozen=True)
class Validity:
    valid_from: date | None = None
    valid_to: date | None = None


def _parse(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def sentence_validity(sentence: str) -> Validity:
    """The validity a sentence's dates state; a bare "on DATE" marks the start when nothing else does."""
    start: date | None = None
    event_day: date | None = None
    end: date | None = None
    previous_was_start = False
    for match in _DATED.finditer(sentence):
        word, value = match.group(1).lower(), _parse(match.group(2))
        if value is None:
            previous_was_start = False
            continue
        if word in _STARTS and start is None:
            start = value
        elif word in _ENDS or (word in _RANGE_ENDS and previous_was_start):
            end = end or value
        elif word == "on" and event_day is None:
            event_day = value
        previous_was_start = word in _STARTS
    return Validity(start or event_day, end)


@dataclass(frozen=True)
class Paragraph:
    offset: int
    text: str


def prose_paragraphs(text: str) -> Iterator[Paragraph]:
    """Non-empty, non-heading lines of a chunk with their offsets (each line a paragraph)."""
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not _HEADING.match(line):
            yield Paragraph(offset + line.index(stripped), stripped)
        offset += len(line)


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of a paragraph by punctuation, for extractors that have no parser."""
    return [sentence.strip() for sentence in _SENTENCE_END.split(paragraph) if sentence.strip()]


def chunk_sentences(text: str) -> list[str]:
    return [sentence for paragraph in prose_paragraphs(text) for sentence in split_sentences(paragraph.text)]
