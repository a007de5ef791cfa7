"""Summaries take memory bounded by design, whatever the size of what they summarise.

A 2 MB document once made one entity's profile compare 59,998 sentences in a dense TF-IDF matrix
(26.8 GiB). The extractive summariser now compares a bounded, deterministic sample of sentences in
sparse form; its peak allocation is measured here with tracemalloc (numpy reports to it).
"""

from __future__ import annotations

import random
import tracemalloc

from pipelines.write.summaries.summaries import extractive_summary

MEGABYTE = 1 << 20


def many_sentences(count: int, seed: int = 0) -> list[str]:
    """`count` distinct sentences over a vocabulary that grows with them, as a long document's does."""
    chooser = random.Random(seed)
    words = [f"w{index}" for index in range(count)]
    return [
        f"The heron {' '.join(chooser.choices(words, k=6))} near Porto {index}." for index in range(count)
    ]


def peak_bytes(function, *args):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        result = function(*args)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_summarising_thousands_of_sentences_stays_within_a_small_memory_bound() -> None:
    sentences = many_sentences(8_000)
    summary, peak = peak_bytes(extractive_summary, sentences, 600)
    # Dense, 8,000 sentences over ~14,000 terms took about 900 MB.
    assert peak < 96 * MEGABYTE, f"peak {peak / MEGABYTE:.0f} MB"
    assert 0 < len(summary) <= 600


def test_the_sample_of_sentences_is_deterministic_and_spans_the_texts() -> None:
    sentences = many_sentences(6_000, seed=1)
    first = extractive_summary(sentences, 600)
    assert first == extractive_summary(list(sentences), 600)
    assert len(first) <= 600


def test_a_summary_of_few_sentences_is_what_it_was() -> None:
    texts = [
        "The grey heron nests in Porto. It eats fish from the river.",
        "Herons nest in Porto every spring. The owl hunts mice.",
        "Porto lies on the Douro river.",
    ]
    assert extractive_summary(texts, 90) == "The grey heron nests in Porto. It eats fish from the river. Porto lies on the Douro river."
