"""Extractive summaries: the sentences nearest the centroid of a cluster, without repeats, in budget.

Sentences are compared in TF-IDF space (a classic centroid summariser): deterministic, fast
enough for every RAPTOR level of a large corpus, and it needs no second pass through the embedder.
The chosen sentences are returned in their original order so the summary reads as prose.

Memory is bounded by design: at most MAX_CANDIDATE_SENTENCES sentences, spread evenly over the
texts, are compared, and in sparse form (a dense matrix of one large document's 60,000 sentences
over its vocabulary took 26.8 GiB).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from pipelines.write.extraction.grounding import chunk_sentences

# Two sentences at least this similar say the same thing; the second adds nothing to a summary.
REDUNDANCY_THRESHOLD = 0.6
# The most sentences one summary compares: a summary of a few hundred characters never needs more,
# and the similarity work grows with their count.
MAX_CANDIDATE_SENTENCES = 2_000
ELLIPSIS = "…"


def truncate(text: str, max_chars: int) -> str:
    """`text` cut at a word boundary to fit `max_chars`, ellipsis included."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - len(ELLIPSIS)]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + ELLIPSIS


def distinct_sentences(texts: Sequence[str]) -> list[str]:
    seen: dict[str, str] = {}
    for text in texts:
        for sentence in chunk_sentences(text):
            seen.setdefault(sentence.lower(), sentence)
    return list(seen.values())


def candidate_sentences(sentences: list[str], cap: int = MAX_CANDIDATE_SENTENCES) -> list[str]:
    """At most `cap` of the sentences, evenly spread and in order: the same every time."""
    if len(sentences) <= cap:
        return sentences
    return [sentences[index * len(sentences) // cap] for index in range(cap)]


def extractive_summary(texts: Sequence[str], max_chars: int) -> str:
    sentences = distinct_sentences(texts)
    if not sentences:
        return ""
    if len(" ".join(sentences)) <= max_chars:
        return " ".join(sentences)
    sentences = candidate_sentences(sentences)
    try:
        # Rows come L2-normalised (a row of stop words only is all zeros) and stay sparse.
        vectors = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(sentences).tocsr()
    except ValueError:
        # Nothing but stop words: no centroid to be near, so keep the opening.
        return truncate(" ".join(sentences), max_chars)
    centroid = np.asarray(vectors.mean(axis=0)).ravel()
    closeness = vectors @ centroid
    chosen: list[int] = []
    used = 0
    for index in sorted(range(len(sentences)), key=lambda i: (-closeness[i], i)):
        length = len(sentences[index]) + (1 if chosen else 0)
        if used + length > max_chars:
            continue
        if chosen and (vectors[chosen] @ vectors[index].T).max() >= REDUNDANCY_THRESHOLD:
            continue
        chosen.append(index)
        used += length
    if not chosen:
        best = max(range(len(sentences)), key=lambda i: (closeness[i], -i))
        return truncate(sentences[best], max_chars)
    return " ".join(sentences[i] for i in sorted(chosen))


def source_digest(texts: Sequence[str]) -> str:
    """A digest of what a summary is made from: a refresh that finds the same one keeps the summary."""
    return hashlib.sha256("\x1f".join(texts).encode()).hexdigest()
