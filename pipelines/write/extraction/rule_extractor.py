"""The fallback extractor: regular expressions only, for when spaCy is not wanted (provider `rules`).

Entities are runs of capitalised words and codes, typed by their form ("Project X", "... Team",
company suffixes, two-word names as people). A fact links two entities that follow each other in
a sentence closely, with the words between them as the predicate ("leads", "is the mentor of" ->
"mentor_of"); "X is paused" and "X is in production" are states. Much cruder than the parse, but
fast, dependency-free and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText, ExtractedFact, Mention
from pipelines.write.extraction.grounding import chunk_sentences, sentence_validity
from pipelines.write.extraction.ontology import CODE_PATTERN, guess_kind

_CAPITALISED = r"[A-Z][\w'’-]*"
_NAME = re.compile(
    rf"{CODE_PATTERN[1:-1]}"
    rf"|{_CAPITALISED}(?:\s+{_CAPITALISED})*\s+and\s+{_CAPITALISED}(?:\s+{_CAPITALISED})*\s+Team\b"
    rf"|{_CAPITALISED}(?:\s+(?:(?:de|of|van|von|da)\s+)?{_CAPITALISED})*"
)
# Capitalised because they open a sentence or a title, not because they name something.
_NOT_NAMES = {
    "the", "a", "an", "on", "in", "at", "as", "since", "from", "each", "every", "this", "that",
    "these", "those", "it", "its", "he", "she", "they", "we", "our", "first", "second", "third",
    "after", "before", "during", "until", "when", "where", "which", "who", "no", "all", "any",
    "some", "one", "two", "there", "here", "if", "but", "and", "or", "so", "for", "of", "by",
    "with", "to", "is", "was", "nobody", "packs", "engineering", "visitors", "about", "later",
    "new", "damaged", "january", "february", "march", "april", "may",
    "june", "july", "august", "september", "october", "november", "december", "monday",
    "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "celsius",
}
_AUXILIARIES = {"is", "are", "was", "were", "has", "have", "had", "will", "would", "also", "now"}
_FILLERS = {"the", "a", "an", "its", "their", "his", "her"}
_PASSIVE_MARKERS = {"is", "are", "was", "were", "been"}
_IRREGULAR = {"led": "lead", "made": "make", "ran": "run", "met": "meet", "sent": "send", "took": "take"}
# A state ends the clause or is followed only by its date: "is paused.", "was paused on 2025-03-14".
_STATE = re.compile(
    r"(?:is|was|remains|are)\s+(in\s+[a-z]+|[a-z]+)(?=\s*(?:[.,;]|$|(?:on|since|from|until)\s+\d))"
)
_MAX_WORDS_BETWEEN = 6
# Words that join two names without saying anything about how they relate.
_CONNECTIVES = {"in", "and", "to", "with", "of", "or", "at", "on", "for", "from", "by", "as", "so"}


def _mentions(sentence: str) -> list[tuple[int, int, Mention]]:
    found = []
    for match in _NAME.finditer(sentence):
        words = match.group(0).split()
        start = match.start()
        while words and words[0].lower() in _NOT_NAMES:
            start += len(words[0]) + 1
            words = words[1:]
        if words:
            name = " ".join(words)
            found.append((start, match.end(), Mention(name, guess_kind(name))))
    return found


def _verb_lemma(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("ies"):
        return word[:-3] + "y"
    if re.search(r"(?:s|x|ch|sh)es$", word):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _predicate(between: str) -> str | None:
    words = re.findall(r"[a-z0-9-]+", between.lower())
    if not words or len(words) > _MAX_WORDS_BETWEEN:
        return None
    passive = words[0] in _PASSIVE_MARKERS and len(words) > 1 and words[1].endswith(("ed", "lt", "wn"))
    words = [w for w in words if w not in _AUXILIARIES and w not in _FILLERS]
    if not words or all(w in _CONNECTIVES or w.isdigit() for w in words):
        return None
    if not passive:
        words[0] = _verb_lemma(words[0])
    return "_".join(words).replace("-", "_")


class RuleExtractor:
    """Regex entities and adjacent-pair facts; no model, no parse."""

    name = "rules"

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        results = []
        for chunk in chunks:
            extraction = ChunkExtraction(chunk.id)
            for sentence in chunk_sentences(chunk.text):
                mentions, facts = self._sentence(sentence)
                extraction.mentions.extend(mentions)
                extraction.facts.extend(facts)
            results.append(extraction)
        return results

    def _sentence(self, sentence: str) -> tuple[list[Mention], list[ExtractedFact]]:
        located = _mentions(sentence)
        validity = sentence_validity(sentence)
        facts = []
        for (_, end, subject), (start, _, target) in zip(located, located[1:]):
            predicate = _predicate(sentence[end:start])
            if predicate and subject != target:
                facts.append(
                    ExtractedFact(subject, predicate, sentence, object=target,
                                  valid_from=validity.valid_from, valid_to=validity.valid_to)
                )
        for _, end, subject in located:
            state = _STATE.match(sentence[end:].lstrip())
            if state and state.group(1) not in _FILLERS:
                facts.append(
                    ExtractedFact(subject, "status", sentence, object_value=state.group(1),
                                  valid_from=validity.valid_from, valid_to=validity.valid_to)
                )
        return [mention for _, _, mention in located], facts
