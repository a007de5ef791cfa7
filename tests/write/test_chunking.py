"""Chunks fit the token budget with their title, end at sentence boundaries and overlap."""

from __future__ import annotations

from pipelines.write.documents.chunking import chunk_document, count_tokens, indexed_text, sentence_spans
from tests import REPOSITORY

HERON = (REPOSITORY / "pipelines" / "demo_corpus" / "documents" / "project-heron.md").read_text()


def test_sentences_split_at_end_punctuation_but_not_after_abbreviations() -> None:
    text = 'He said "Stop." Then Dr. Smith left. U.S. troops came.\n\n## Next\nA list:\n- one item'
    sentences = [text[start:end] for start, end in sentence_spans(text)]
    assert sentences == ['He said "Stop."', "Then Dr. Smith left.", "U.S. troops came.", "## Next", "A list:", "- one item"]


def test_every_chunk_with_its_title_fits_the_budget() -> None:
    chunks = chunk_document("Project Heron", HERON, max_tokens=80, overlap_tokens=20)
    assert len(chunks) > 3
    for chunk in chunks:
        assert count_tokens(indexed_text("Project Heron", chunk.text)) <= 80
        assert chunk.token_count == count_tokens(chunk.text)


def test_chunks_end_at_sentence_boundaries_and_overlap_by_whole_sentences() -> None:
    chunks = chunk_document("Project Heron", HERON, max_tokens=80, overlap_tokens=20)
    sentences = {HERON[start:end] for start, end in sentence_spans(HERON)}
    for previous, chunk in zip(chunks, chunks[1:]):
        assert previous.text[-1] in ".!?"
        assert any(chunk.text.startswith(sentence) for sentence in sentences)
        last_sentence = max((s for s in sentences if previous.text.endswith(s)), key=len)
        if count_tokens(last_sentence) <= 20:
            assert last_sentence in chunk.text


def test_the_title_heading_is_not_repeated_in_the_chunks() -> None:
    chunks = chunk_document("Project Heron", HERON, max_tokens=200, overlap_tokens=40)
    assert not chunks[0].text.startswith("# Project Heron")
    assert chunks[0].position == 0 and [c.position for c in chunks] == list(range(len(chunks)))


def test_a_sentence_longer_than_the_budget_is_cut_into_overlapping_windows() -> None:
    words = " ".join(f"w{i}" for i in range(300))
    chunks = chunk_document("T", words, max_tokens=100, overlap_tokens=20)
    assert all(chunk.token_count <= 99 for chunk in chunks)
    assert chunks[0].text.split()[-20:] == chunks[1].text.split()[:20]
    assert chunks[-1].text.endswith("w299")


def test_chunking_is_deterministic() -> None:
    first = chunk_document("Project Heron", HERON, max_tokens=120, overlap_tokens=30)
    assert first == chunk_document("Project Heron", HERON, max_tokens=120, overlap_tokens=30)
