"""Questions that arrive together, embedded in one pass.

The question embedder is most of a find's CPU on the server (10 ms of about 25 for a MuSiQue
question; the statement is 9), and a pass of 16 questions costs about what three passes of one do.
Concurrent requests therefore hand their questions to one `QuestionBatches`: whoever arrives while
no pass runs embeds at once, alone; whoever arrives during a pass waits for it to end, and the
questions that gathered meanwhile go through the next pass together (group commit, as a database
flushes the commits that queued behind one fsync). A lone request never waits for company, and a
batch never waits longer than the pass before it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pipelines.resources.embedder import QuestionEmbedder


@dataclass(eq=False)
class _Asked:
    questions: list[str]
    # Set when `vectors` (or `error`) is filled in, or when this caller is to run the next pass.
    woken: threading.Event = field(default_factory=threading.Event)
    leads: bool = False
    vectors: np.ndarray | None = None
    error: BaseException | None = None


class QuestionBatches:
    """`embed_questions` for many threads at once, each call answered with its own rows."""

    def __init__(self, embedder: QuestionEmbedder, max_questions: int) -> None:
        if max_questions < 1:
            raise ValueError(f"max_questions must be at least 1, got {max_questions}")
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.dimension = embedder.dimension
        self.max_questions = max_questions
        self._lock = threading.Lock()
        # Callers waiting for a pass, in arrival order; `_passing` while one runs. Whenever no pass
        # runs, nobody waits: the caller that ends a pass hands the next to the first in line.
        self._waiting: list[_Asked] = []
        self._passing = False

    @property
    def queued(self) -> int:
        """Callers waiting for a pass (a server's queue depth)."""
        with self._lock:
            return len(self._waiting)

    @property
    def passing(self) -> bool:
        """Whether a pass runs now."""
        with self._lock:
            return self._passing

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        asked = _Asked(list(questions))
        with self._lock:
            self._waiting.append(asked)
            asked.leads = not self._passing
            self._passing = True
        if not asked.leads:
            asked.woken.wait()
        if asked.leads:
            self._run_pass()
        if asked.error is not None:
            raise asked.error
        assert asked.vectors is not None
        return asked.vectors

    def _run_pass(self) -> None:
        with self._lock:
            batch = self._take_batch()
        try:
            vectors = self.embedder.embed_questions([question for asked in batch for question in asked.questions])
        except BaseException as error:  # every caller in the batch gets the pass's failure, as its own would
            for asked in batch:
                asked.error = error
        else:
            start = 0
            for asked in batch:
                asked.vectors = vectors[start : start + len(asked.questions)]
                start += len(asked.questions)
        with self._lock:
            successor = self._waiting[0] if self._waiting else None
            if successor is None:
                self._passing = False
            else:
                successor.leads = True
        for asked in batch:
            asked.woken.set()
        if successor is not None:
            successor.woken.set()

    def _take_batch(self) -> list[_Asked]:
        """The callers first in line whose questions fit one pass (always at least the first)."""
        taken, count = 0, 0
        for asked in self._waiting:
            if taken and count + len(asked.questions) > self.max_questions:
                break
            taken, count = taken + 1, count + len(asked.questions)
        batch = self._waiting[:taken]
        del self._waiting[:taken]
        return batch
