"""Where facts may come from in a chunk, and which dates bound them.

Extraction reads prose paragraphs only: markdown headings are labels, not claims. Validity comes
from ISO dates introduced by a clear preposition ("since 2025-04-01", "from ... until ...",
"as of ...", "paused on ..."); a sentence without one yields facts with open validity.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

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


# Relative times in conversation, resolved against the day the words were said.
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "couple of": 2, "few": 3,
}
_WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
# Weekdays as people write them in a chat: "Friday", "Fri", "Tues", "Thurs".
WEEKDAY = r"(?:mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?)"
_UNITS = r"day|week|weekend|month|year"
_RELATIVE = re.compile(
    r"\b(?:"
    r"(?P<fixed>the day before yesterday|yesterday|last night|today|tonight|this morning|this afternoon"
    r"|this evening|tomorrow|this week|this weekend|this month|this year)"
    r"|in (?P<year>(?:19|20)\d{2})"
    rf"|(?P<count>\d+|{'|'.join(sorted(_NUMBER_WORDS, key=len, reverse=True))})\s+(?P<counted>{_UNITS})s?\s+ago"
    rf"|(?P<direction>last|past|previous|this past|next|this coming|coming)\s+(?P<unit>{_UNITS}|{WEEKDAY})"
    r")\b",
    re.IGNORECASE,
)
_FIXED_OFFSETS = {"the day before yesterday": -2, "yesterday": -1, "last night": -1, "tomorrow": 1}


def _shift_months(day: date, months: int) -> date:
    """The first day of the month `months` away: a month said without a day means the month."""
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _weekday_from(day: date, weekday: int, amount: int) -> date:
    """The `amount`-th given weekday after `day` (before it when negative), never `day` itself."""
    if amount > 0:
        return day + timedelta(days=((weekday - day.weekday()) % 7 or 7) + 7 * (amount - 1))
    return day - timedelta(days=((day.weekday() - weekday) % 7 or 7) + 7 * (-amount - 1))


def _shifted(day: date, unit: str, amount: int) -> date:
    if unit == "day":
        return day + timedelta(days=amount)
    if unit == "week":
        return day + timedelta(weeks=amount)
    if unit == "weekend":
        return _weekday_from(day, _WEEKDAYS.index("sat"), amount)
    if unit == "month":
        return _shift_months(day, amount)
    return date(day.year + amount, 1, 1)


def relative_day(sentence: str, said_on: date) -> date | None:
    """The day a sentence's first relative time means, said on `said_on`: "yesterday" the day
    before, "two weeks ago" fourteen days before, "last Friday" the latest Friday before it, "last
    month" and "next year" the first day of that month or year, "this week" the day itself, a
    year ("in 2022") its first day; None without one."""
    match = _RELATIVE.search(sentence)
    if match is None:
        return None
    if match["year"]:
        return date(int(match["year"]), 1, 1)
    if match["fixed"]:
        return said_on + timedelta(days=_FIXED_OFFSETS.get(match["fixed"].lower(), 0))
    if match["count"]:
        count_word = match["count"].lower()
        count = int(count_word) if count_word.isdigit() else _NUMBER_WORDS[count_word]
        return _shifted(said_on, match["counted"].lower(), -count)
    forward = match["direction"].lower() in {"next", "this coming", "coming"}
    unit = match["unit"].lower()
    if re.fullmatch(WEEKDAY, unit):
        return _weekday_from(said_on, _WEEKDAYS.index(unit[:3]), 1 if forward else -1)
    return _shifted(said_on, unit, 1 if forward else -1)
