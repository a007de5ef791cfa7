"""Benchmark datasets: a corpus of passages and questions with gold passage ids (../shared/data format).

Each passage becomes one document whose id is the passage id and whose title is the passage title,
so passage-level scoring is by document id and the title lane sees the titles users would have.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from pipelines.errors import InputError
from pipelines.resources.storable_text import unstorable_reason

Split = Literal["dev", "train", "all"]
TRAIN_SPLIT = "train"


class _Strict(BaseModel):
    # Lax mode turns JSON arrays into tuples but still refuses numbers where text is expected.
    model_config = ConfigDict(frozen=True)

    @pydantic.field_validator("*", mode="after")
    @classmethod
    def _text_is_storable(cls, value: object) -> object:
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, str) and (reason := unstorable_reason(item)):
                raise ValueError(reason)
        return value


class Passage(_Strict):
    id: str = Field(min_length=1)
    title: str
    text: str
    # A memory's passages: who may read it, when it was said, and the turn of a conversation it is.
    scopes: tuple[str, ...] = ()
    observed_at: str | None = None
    conversation: str | None = None
    session: int | str | None = None
    speaker: str | None = None


class Question(_Strict):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    gold_ids: tuple[str, ...] = Field(min_length=1)
    answers: tuple[str, ...] = ()
    # The caller's scopes: the question is asked as a confined caller of these, as a tenant would.
    scopes: tuple[str, ...] = ()
    meta: dict[str, object] = {}

    @property
    def split(self) -> str:
        return str(self.meta.get("split", ""))

    @property
    def category(self) -> str | None:
        category = self.meta.get("category")
        return str(category) if category is not None else None


class _DatasetFile(_Strict):
    name: str = Field(min_length=1)
    corpus: tuple[Passage, ...] = Field(min_length=1)
    queries: tuple[Question, ...] = Field(min_length=1)


@dataclass(frozen=True)
class Dataset:
    name: str
    passages: tuple[Passage, ...]
    questions: tuple[Question, ...]

    def questions_in(self, split: Split, limit: int | None = None) -> list[Question]:
        """Dev is every question not marked train (train questions are kept for tuning only)."""
        chosen = [
            question
            for question in self.questions
            if split == "all" or (question.split == TRAIN_SPLIT) == (split == "train")
        ]
        return chosen[:limit] if limit else chosen


def _validation_message(path: Path, error: pydantic.ValidationError) -> str:
    first = error.errors()[0]
    location = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
    return f"{path}: {location.lstrip('.') or '(top level)'}: {first['msg']}"


def parse_dataset(data: object, source: Path) -> Dataset:
    try:
        parsed = _DatasetFile.model_validate(data)
    except pydantic.ValidationError as error:
        raise InputError(_validation_message(source, error)) from None
    seen: set[str] = set()
    for index, passage in enumerate(parsed.corpus):
        if passage.id in seen:
            raise InputError(f"{source}: corpus[{index}].id: passage id {passage.id!r} appears twice")
        seen.add(passage.id)
    for index, question in enumerate(parsed.queries):
        unknown = [gold for gold in question.gold_ids if gold not in seen]
        if unknown:
            raise InputError(
                f"{source}: queries[{index}].gold_ids: {unknown[0]!r} is not a passage id in the corpus"
            )
    return Dataset(parsed.name, parsed.corpus, parsed.queries)


def load_dataset(path: Path) -> Dataset:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"{path}: cannot read dataset ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not valid UTF-8 (at byte {error.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: invalid JSON: {error.msg}") from None
    except RecursionError:
        raise InputError(f"{path}: invalid JSON: nested too deeply") from None
    return parse_dataset(data, path)


def database_suffix(name: str) -> str:
    """The dataset name reduced to what a PostgreSQL identifier may hold unquoted."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")
    return cleaned[:40] or "dataset"


def corpus_records(passages: Iterable[Passage]) -> list[dict[str, object]]:
    """The ingest JSONL records: one document per passage, id and title kept as they are; a turn
    of a conversation as a turn record, numbered by its place in the corpus."""
    return [_corpus_record(passage) for passage in passages]


def _corpus_record(passage: Passage) -> dict[str, object]:
    record: dict[str, object] = {
        "id": passage.id,
        "title": passage.title,
        "text": passage.text,
        "uri": None,
        "observed_at": passage.observed_at,
        "expires_at": None,
        "scopes": list(passage.scopes),
    }
    if passage.conversation is not None:
        record.update(conversation=passage.conversation, session=passage.session, speaker=passage.speaker)
    return record


def corpus_jsonl(passages: Iterable[Passage]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n" for record in corpus_records(passages))


def write_corpus_jsonl(passages: Iterable[Passage], path: Path) -> Path:
    path.write_text(corpus_jsonl(passages), encoding="utf-8")
    return path


def corpus_fingerprint(passages: Iterable[Passage], pipeline_settings: str) -> str:
    """Changes whenever the documents or the write-side settings would give different assets."""
    digest = hashlib.sha256(corpus_jsonl(passages).encode())
    digest.update(b"\0" + pipeline_settings.encode())
    return digest.hexdigest()
