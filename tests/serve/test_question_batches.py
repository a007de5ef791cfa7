"""Concurrent finds share the question embedder's passes: a lone question is embedded at once, the
questions that arrive during a pass go through the next one together, each caller gets its own rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pipelines.resources.embedder import LocalMiniLMEmbedder
from pipelines.serve.question_batches import QuestionBatches


class RecordingEmbedder:
    """Each question's vector is its length; the first pass can be held open to let callers queue."""

    model_id = "recording"
    dimension = 2

    def __init__(self) -> None:
        self.passes: list[list[str]] = []
        self.first_pass_entered = threading.Event()
        self.release_first_pass = threading.Event()

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        self.passes.append(list(questions))
        if len(self.passes) == 1:
            self.first_pass_entered.set()
            self.release_first_pass.wait(timeout=30)
        if any(question == "fail" for question in questions):
            raise RuntimeError("the model failed")
        return np.array([[len(question), 1.0] for question in questions], dtype=np.float32)


def _queue_behind_a_held_pass(embedder: RecordingEmbedder, batches: QuestionBatches, questions: list[str]) -> list:
    """Ask 'first' (its pass held open), then every question of `questions` from its own thread
    while that pass runs; release the pass and return each call's outcome (vectors or error)."""
    with ThreadPoolExecutor(max_workers=len(questions) + 1) as pool:
        first = pool.submit(batches.embed_questions, ["first"])
        assert embedder.first_pass_entered.wait(timeout=30)
        queued = [pool.submit(batches.embed_questions, [question]) for question in questions]
        deadline = time.monotonic() + 30
        while batches.queued < len(questions) and time.monotonic() < deadline:
            time.sleep(0.01)
        embedder.release_first_pass.set()
        first.result(timeout=30)
        return [future.exception(timeout=30) or future.result(timeout=30) for future in queued]


def test_a_lone_question_is_embedded_at_once_in_its_own_pass() -> None:
    embedder = RecordingEmbedder()
    embedder.release_first_pass.set()
    batches = QuestionBatches(embedder, max_questions=32)
    vectors = batches.embed_questions(["what is kestrel?"])
    assert embedder.passes == [["what is kestrel?"]]
    assert vectors.tolist() == [[16.0, 1.0]]


def test_questions_that_arrive_during_a_pass_share_the_next_and_each_gets_its_own_row() -> None:
    embedder = RecordingEmbedder()
    batches = QuestionBatches(embedder, max_questions=32)
    questions = ["a", "bb", "ccc", "dddd", "eeeee"]
    answers = _queue_behind_a_held_pass(embedder, batches, questions)
    assert len(embedder.passes) == 2
    assert sorted(embedder.passes[1]) == sorted(questions)
    assert [answer.tolist() for answer in answers] == [[[len(question), 1.0]] for question in questions]
    assert not batches.passing and batches.queued == 0


def test_a_pass_takes_at_most_max_questions() -> None:
    embedder = RecordingEmbedder()
    batches = QuestionBatches(embedder, max_questions=2)
    answers = _queue_behind_a_held_pass(embedder, batches, ["a", "bb", "ccc", "dddd", "eeeee"])
    assert [len(questions) for questions in embedder.passes] == [1, 2, 2, 1]
    assert [answer.tolist()[0][0] for answer in answers] == [1, 2, 3, 4, 5]


def test_a_failed_pass_fails_its_callers_only() -> None:
    embedder = RecordingEmbedder()
    batches = QuestionBatches(embedder, max_questions=2)
    answers = _queue_behind_a_held_pass(embedder, batches, ["fail", "bb", "ccc"])
    assert [type(answer).__name__ for answer in answers] == ["RuntimeError", "RuntimeError", "ndarray"]
    assert batches.embed_questions(["again"]).tolist() == [[5.0, 1.0]]


def test_the_local_model_embeds_questions_together_as_it_does_alone() -> None:
    embedder = LocalMiniLMEmbedder()
    questions = ["What is Kestrel?", "Who leads the migration of the payment service to Frankfurt in May?", "status"]
    together = embedder.embed_questions(questions)
    alone = np.vstack([embedder.embed_questions([question]) for question in questions])
    assert together.shape == (3, embedder.dimension)
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_max_questions_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        QuestionBatches(RecordingEmbedder(), max_questions=0)
