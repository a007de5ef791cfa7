"""What a question contributes to the find statement besides its vector: its terms.

A term is a run of up to MAX_TERM_WORDS consecutive words of the question, in lower case, joined by
single spaces. Matching the stored lower-case names and titles with `= ANY(terms)` then finds exactly
the entity names and document titles the question contains as whole words, through a plain B-tree
index, and "heron" never matches inside "herons" or "Lutheron". A term written with accents is
also there folded ("tekezé river" and "tekeze river"): titles are looked up folded, the other names
as written.
"""

from __future__ import annotations

import re

from pipelines.accents import fold_accents

MAX_TERM_WORDS = 8
# Words keep inner hyphens, apostrophes, dots and slashes ("HX-4417", "3.8.2", "o'neil");
# punctuation at either end ("Heron?", "(Porto)") is not part of the word.
_WORD = re.compile(r"[\w][\w\-'’./]*[\w]|[\w]")
# "Lucia Ferraro's mentor" names Lucia Ferraro.
_POSSESSIVE = re.compile(r"['’]s$")


def question_words(question: str) -> list[str]:
    return [_POSSESSIVE.sub("", word.lower()) for word in _WORD.findall(question)]


def question_terms(question: str, max_words: int = MAX_TERM_WORDS) -> list[str]:
    """Every run of 1..max_words consecutive words, lower case, each once, in order of appearance,
    followed by its accent-folded spelling where that differs."""
    words = question_words(question)
    terms: dict[str, None] = {}
    for start in range(len(words)):
        for end in range(start + 1, min(start + max_words, len(words)) + 1):
            term = " ".join(words[start:end])
            terms.setdefault(term, None)
            terms.setdefault(fold_accents(term), None)
    return list(terms)
