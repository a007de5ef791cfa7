"""One configuration's score on one split: every question through find, the metrics per question.

Questions are embedded once per split (the evaluation's `QuestionVectors`), so a trial measures
retrieval alone. Each trial runs the find statement its plan shape compiles to; `StatementLedger`
records which statement that was, so the study can prove a value-only trial compiled nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pipelines.config import LanegraphConfig
from pipelines.evaluation.answers import ANSWER_METRIC, answer_scores, scored_questions
from pipelines.evaluation.arms import Arm
from pipelines.evaluation.dataset import Question
from pipelines.evaluation.metrics import latency_percentiles, metric_names, per_question_scores, ranking_depth
from pipelines.evaluation.run import DEFAULT_CUTOFFS, QuestionVectors, run_arm
from pipelines.read.compiler import CompiledStatement, Shape, compile_find
from pipelines.resources.database import Database
from pipelines.resources.embedder import QuestionEmbedder

PREPARED_STATEMENTS = "SELECT count(*) FROM pg_prepared_statements WHERE statement = ANY(%s)"


@dataclass
class StatementLedger:
    """The find statements a study ran: one entry per plan shape, and the distinct compiled
    statement objects the compiler's cache handed out (equal to the shapes unless a value-only
    change had recompiled)."""

    shapes: dict[Shape, CompiledStatement] = field(default_factory=dict)
    compiled: dict[int, CompiledStatement] = field(default_factory=dict)

    def record(self, config: LanegraphConfig) -> CompiledStatement:
        statement = compile_find(config)
        self.shapes.setdefault(Shape.of(config), statement)
        # Held by identity: the object itself stays referenced, so an id is never reused.
        self.compiled.setdefault(id(statement), statement)
        return statement

    @property
    def compiled_count(self) -> int:
        return len(self.compiled)

    def prepared_count(self, database: Database) -> int:
        """How many of these statements the server holds prepared on the study's connection."""
        with database.connection() as connection:
            [(count,)] = connection.execute(PREPARED_STATEMENTS, ([s.sql for s in self.compiled.values()],)).fetchall()
        return int(count)


@dataclass(frozen=True)
class SplitScores:
    """One configuration on one split: each metric per question (answer@budget over the questions
    it scores), each question's ranking, and find's latency."""

    questions: Sequence[Question]
    per_question: Mapping[str, np.ndarray]
    rankings: Mapping[str, Sequence[str]]
    latencies_ms: Sequence[float]

    def mean(self, metric: str) -> float:
        values = self.per_question[metric]
        return float(values.mean()) if len(values) else 0.0

    @property
    def p50_ms(self) -> float:
        return latency_percentiles(self.latencies_ms)["p50_ms"]

    def objective(self, weights: Mapping[str, float]) -> float:
        return sum(weight * self.mean(metric) for metric, weight in weights.items())

    def objective_per_question(self, weights: Mapping[str, float]) -> np.ndarray:
        """Per question, with a mean equal to `objective`: a metric scored on a subset (answer
        coverage skips yes/no questions) counts there, scaled up, and 0 elsewhere, so a paired test
        over all questions sees every difference once."""
        total = np.zeros(len(self.questions))
        for metric, weight in weights.items():
            values = self.per_question[metric]
            if len(values) == len(self.questions):
                total += weight * values
            elif len(values):
                scored = {question.id for question in scored_questions(self.questions)}
                positions = [index for index, question in enumerate(self.questions) if question.id in scored]
                total[positions] += weight * values * len(self.questions) / len(values)
        return total


class SplitScorer:
    """Scores configurations on one split's questions over one database."""

    def __init__(
        self,
        database: Database,
        questions: Sequence[Question],
        embedder: QuestionEmbedder,
        chunk_documents: dict[str, str],
        cutoffs: Sequence[int],
        ledger: StatementLedger,
    ) -> None:
        self.database = database
        self.questions = list(questions)
        self.embedder = QuestionVectors(embedder, [question.text for question in self.questions])
        self.chunk_documents = chunk_documents
        self.metrics = metric_names(sorted(set(cutoffs) | set(DEFAULT_CUTOFFS)))
        self.depth = ranking_depth([int(m.split("@")[1]) for m in self.metrics if m.startswith("recall@")])
        self.answers = bool(scored_questions(self.questions))
        self.ledger = ledger

    def warm_up(self) -> None:
        """Compile the metric kernels (ranx JIT-compiles them with numba: tens of seconds, once per
        process) before the study's clock starts, so trials per minute measures trials."""
        first = self.questions[:1]
        per_question_scores(first, {first[0].id: list(first[0].gold_ids)}, self.metrics)

    def score(self, name: str, config: LanegraphConfig, answered: Callable[[int], None] = lambda count: None) -> SplitScores:
        self.ledger.record(config)
        outcome = run_arm(
            self.database, Arm(name, config), self.questions, embedder=self.embedder,
            chunk_documents=self.chunk_documents, depth=self.depth, answered=answered,
        )
        per_question = per_question_scores(self.questions, outcome.rankings, self.metrics)
        if self.answers:
            per_question[ANSWER_METRIC] = answer_scores(self.questions, outcome.prompts)
        return SplitScores(self.questions, per_question, outcome.rankings, outcome.latencies_ms)
