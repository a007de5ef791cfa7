"""Answer coverage: does the evidence an arm would put in the prompt contain a gold answer?

Passage recall only sees lanes that return passages, so it cannot tell what the facts, profile,
community and overview lanes add, nor what the token budget and `snippet_chars` cut away. Answer
coverage reads the evidence itself: a question counts when a gold answer occurs, as whole words,
in the lines packed into the budget. Text is compared as the SQuAD evaluation compares answers
(lower case, punctuation and articles removed, whitespace collapsed). Questions answered only by
"yes" or "no" are not scored: those words prove nothing by occurring.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence

import numpy as np

from pipelines.evaluation.dataset import Question

ANSWER_METRIC = "answer@budget"
UNSCORABLE_ANSWERS = frozenset({"", "yes", "no"})

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def scorable_answers(question: Question) -> list[str]:
    return [answer for answer in map(normalize_answer, question.answers) if answer not in UNSCORABLE_ANSWERS]


def answer_found(answers: Sequence[str], evidence: str) -> bool:
    """Whether any normalized answer occurs as whole words in the normalized evidence."""
    haystack = f" {normalize_answer(evidence)} "
    return any(f" {answer} " in haystack for answer in answers)


def scored_questions(questions: Sequence[Question]) -> list[Question]:
    return [question for question in questions if scorable_answers(question)]


def answer_scores(questions: Sequence[Question], prompts: Mapping[str, str]) -> np.ndarray:
    """1 or 0 per scored question, in the order of `scored_questions(questions)`."""
    return np.array(
        [
            float(answer_found(scorable_answers(question), prompts.get(question.id, "")))
            for question in scored_questions(questions)
        ]
    )
