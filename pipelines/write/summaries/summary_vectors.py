"""How a summary gets its vector: from the vectors of what it summarises, or by embedding its text.

An extractive summary is its sources' own sentences, so the normalized mean of the vectors already
computed for those sources stands for it with no model call. Measured on the MuSiQue build (train
questions, the lanes' top 2): a community's mean of its facts' vectors found the answer as often as
its text's embedding (10 against 11 questions of 100; HotpotQA 25.3% both), and RAPTOR nodes' means
of their children 3 against 4. An abstractive (LLM) summary says things its sources do not say in
those words, so its text is embedded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from pipelines.write.progress import Embed


def unit(vectors: np.ndarray) -> np.ndarray:
    """`vectors` scaled to length 1 along the last axis; a zero vector stays zero."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


@dataclass(frozen=True)
class SummaryVectors:
    """Vectors for summaries: `from_sources` when the summarizer quotes its sources, else `embed`."""

    from_sources: bool
    embed: Embed

    @property
    def method(self) -> str:
        """Recorded with a build's settings: rows made one way must not be kept beside the other's."""
        return "mean of source vectors" if self.from_sources else "embedded text"

    def __call__(self, summaries: Sequence[str], sources: Sequence[np.ndarray]) -> np.ndarray:
        """One vector per summary; `sources[i]` holds the vectors of what summary i was made from, one
        per row. A summary none of whose sources has a vector yet (a fact written after the entity
        graph embedded the others) is embedded from its text."""
        quoted = [self.from_sources and len(vectors) > 0 for vectors in sources]
        unquoted = [summary for summary, mean in zip(summaries, quoted) if not mean]
        embedded: Iterator[np.ndarray] = iter(self.embed(unquoted) if unquoted else [])
        return np.asarray([
            # Summed in double precision: the same sources in another order give the same float32 vector.
            unit(np.asarray(vectors, dtype=np.float64).mean(axis=0)) if mean else next(embedded)
            for vectors, mean in zip(sources, quoted)
        ], dtype=np.float32)
