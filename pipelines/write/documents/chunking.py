"""Token-aware chunks that end at sentence boundaries and overlap by whole sentences.

Tokens are counted with a regular expression: every run of word characters and every single
punctuation mark is one token. That is BERT's pre-tokenization, so the count is a lower bound of the
word pieces an embedding model sees (measured on MuSiQue passages with all-MiniLM-L6-v2: 1.10 word
pieces per token on average, 1.28 at the 95th percentile). The chunk budget includes the document
title, which is prefixed to every chunk's embedded and indexed text.

A chunk's stored text is the plain slice of the document (formatting kept); `indexed_text` is what
the embedding model and BM25 see: the title, a blank line, the chunk.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pipelines.write.documents.sources import sha256_text, without_title_heading

# A word longer than MAX_TOKEN_CHARS counts as one token per MAX_TOKEN_CHARS characters (the embedding
# model sees many word pieces in it), so a chunk holding one still fits its budget and a window can
# cut through it.
MAX_TOKEN_CHARS = 64
TOKEN = re.compile(rf"\w{{1,{MAX_TOKEN_CHARS}}}|[^\w\s]")
_LINE = re.compile(r"[^\n]*\n?")
# Lines that open a block of their own: markdown headings, list items, quotes and table rows.
_STRUCTURE_LINE = re.compile(r"[ \t]*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>|\|)")
# A sentence ends at . ! or ? (closing quotes and brackets included) followed by space and a
# capital, digit or opening quote/bracket.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(\s+)(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Sr|Jr|Inc|Ltd|Co|Corp|vs|etc|No|Fig|approx|e\.g|i\.e)|\b[A-Z])\.$"
)
# A chunker change that alters output must change this, so every document is chunked again.
CHUNKER_VERSION = "2"


@dataclass(frozen=True)
class Chunk:
    position: int
    text: str
    token_count: int


def count_tokens(text: str) -> int:
    return sum(1 for _ in TOKEN.finditer(text))


def indexed_text(title: str, text: str) -> str:
    """What the embedding model and BM25 see for a chunk: the title keeps a chunk in its context."""
    return f"{title}\n\n{text}" if title else text


def chunk_hash(title: str, text: str) -> str:
    """Changes whenever `indexed_text` would: a new title re-embeds and re-indexes the chunks."""
    return sha256_text(json.dumps([title, text], ensure_ascii=False))


def chunking_fingerprint(content_hash: str, max_tokens: int, overlap_tokens: int) -> str:
    return sha256_text(f"{CHUNKER_VERSION}:{max_tokens}:{overlap_tokens}:{content_hash}")


def chunk_document(title: str, body: str, *, max_tokens: int, overlap_tokens: int) -> list[Chunk]:
    """The document's chunks in order; each fits `max_tokens` together with the title."""
    text = without_title_heading(body, title)
    # A long title may not crowd out the text: the chunk keeps at least half the budget.
    budget = max(max_tokens - count_tokens(title), max_tokens // 2)
    overlap = min(overlap_tokens, budget // 2)
    pieces = [
        window
        for start, end in sentence_spans(text)
        for window in _token_windows(text, start, end, budget, overlap)
    ]
    spans = _pack(pieces, budget, overlap)
    chunks = []
    for position, (start, end) in enumerate(spans):
        chunk_text = text[start:end]
        chunks.append(Chunk(position, chunk_text, count_tokens(chunk_text)))
    return chunks


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every sentence, whitespace trimmed; headings and list items stand alone."""
    spans = []
    for block_start, block_end in _blocks(text):
        start = block_start
        for match in _SENTENCE_END.finditer(text, block_start, block_end):
            if _ABBREVIATION.search(text, start, match.start(1)):
                continue
            spans.append((start, match.start(1)))
            start = match.end(1)
        spans.append((start, block_end))
    return [trimmed for span in spans if (trimmed := _trim(text, *span)) is not None]


def _blocks(text: str) -> list[tuple[int, int]]:
    """Paragraphs (blank-line separated), with every heading, list item, quote and table row a
    block of its own; no sentence runs across a block."""
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    after_heading = False
    for line in _LINE.finditer(text):
        if line.start() == line.end():
            break
        content = line.group()
        if not content.strip() or _STRUCTURE_LINE.match(content) or after_heading:
            if start is not None:
                blocks.append((start, line.start()))
            start = line.start() if content.strip() else None
        elif start is None:
            start = line.start()
        after_heading = content.lstrip().startswith("#")
    if start is not None:
        blocks.append((start, len(text)))
    return blocks


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    tokens: int
    heading: bool = False


def _token_windows(text: str, start: int, end: int, budget: int, overlap: int) -> list[_Piece]:
    """A sentence as one piece, or, when longer than the budget, as overlapping token windows."""
    tokens = [match.span() for match in TOKEN.finditer(text, start, end)]
    if len(tokens) <= budget:
        return [_Piece(start, end, len(tokens), heading=text.startswith("#", start))]
    step = budget - overlap
    windows = []
    for first in range(0, len(tokens), step):
        last = min(first + budget, len(tokens))
        windows.append(_Piece(tokens[first][0], tokens[last - 1][1], last - first))
        if last == len(tokens):
            break
    return windows


def _pack(pieces: list[_Piece], budget: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy windows of whole pieces; each next window starts with the previous window's last
    pieces that fit in `overlap` tokens. Pieces cut from one long sentence overlap already."""
    spans: list[tuple[int, int]] = []
    first = 0
    while first < len(pieces):
        last, total = first, pieces[first].tokens
        while last + 1 < len(pieces) and total + pieces[last + 1].tokens <= budget:
            last += 1
            total += pieces[last].tokens
        # A heading opens the next chunk rather than closing this one.
        while last > first and pieces[last].heading and last + 1 < len(pieces):
            last -= 1
        spans.append((pieces[first].start, pieces[last].end))
        if last + 1 == len(pieces):
            break
        next_first, carried = last + 1, 0
        while next_first - 1 > first and carried + pieces[next_first - 1].tokens <= overlap:
            next_first -= 1
            carried += pieces[next_first].tokens
        first = next_first
    return spans
