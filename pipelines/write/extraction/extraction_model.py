"""What every extractor (spaCy, rules, LLM) returns for one chunk.

Facts are grounded: `statement` is a sentence of the chunk's text, verbatim, so a reader can always
see where a claim came from. Either `object` (an entity) or `object_value` (a literal such as the
state "paused" or a definition) is set, never both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from pipelines.write.extraction.ontology import ENTITY_KINDS, clean_entity_name, normalize_entity_name


@dataclass(frozen=True)
class Mention:
    name: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in ENTITY_KINDS:
            raise ValueError(f"unknown entity kind {self.kind!r} for {self.name!r}")
        object.__setattr__(self, "name", clean_entity_name(self.name))

    @property
    def normalized_name(self) -> str:
        return normalize_entity_name(self.name)


@dataclass(frozen=True)
class ExtractedFact:
    subject: Mention
    predicate: str
    statement: str
    object: Mention | None = None
    object_value: str | None = None
    valid_from: date | None = None
    valid_to: date | None = None

    def __post_init__(self) -> None:
        if (self.object is None) == (self.object_value is None):
            raise ValueError(f"fact {self.statement!r} needs exactly one of object and object_value")
        # An end before the start is a misread date, and the fact table's CHECK would reject the
        # whole batch over it; the start alone is still worth keeping.
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            object.__setattr__(self, "valid_to", None)


@dataclass(frozen=True)
class ChunkText:
    id: str
    text: str
    # The page the chunk comes from: its title without the parenthesised qualifier
    # (`document.title_name`), and the qualifier ("Steve Hillage album"). The title names the
    # page's main entity, which the page's pronouns and short references mean.
    title_name: str = ""
    title_qualifier: str = ""
    # A turn of a conversation: who said it, to whom (the other participant of a two-person
    # conversation, "" if unknown or more), and the day of its session, which relative times
    # ("yesterday", "next month") count from. A chunk with a speaker is read as dialogue.
    speaker: str = ""
    addressee: str = ""
    observed_at: date | None = None


@dataclass
class ChunkExtraction:
    chunk_id: str
    mentions: list[Mention] = field(default_factory=list)
    facts: list[ExtractedFact] = field(default_factory=list)
    # Kinds the text states outright ("X is an engineer"), weighed above the tagger's guesses.
    kind_hints: list[Mention] = field(default_factory=list)
    # Other names the text declares for an entity ("Federal Bureau of Investigation (FBI)"):
    # (the other name, the entity it names).
    aliases: list[tuple[str, Mention]] = field(default_factory=list)
