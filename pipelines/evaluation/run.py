"""An evaluation end to end: load the dataset, build its database, run every arm, report.

Every arm answers every question on the same database with the same question vectors: each
question is embedded once, up front, so latency measures retrieval (the statement, dedupe and
packing), not the embedding model, and every arm sees identical vectors. Access is never recorded,
so no arm changes the access counts (a ranking input) that the next arm sees. A question with
`scopes` is asked, in every arm, as a confined caller of those scopes (row-level security, as a
tenant asks): a memory's question sees its own conversation only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import numpy as np

from pipelines.config import default_config_path, load_config
from pipelines.evaluation.arms import PPR_ARM, Arm, choose_arms, ranking_statement
from pipelines.evaluation.build import ensure_built
from pipelines.evaluation.dataset import Question, Split, load_dataset
from pipelines.evaluation.metrics import ranking_depth
from pipelines.evaluation.passages import EvidenceSource, chunk_passages, load_chunk_documents, passage_ranking
from pipelines.evaluation.ppr import EntityGraph, load_entity_graph, ppr_ranking
from pipelines.evaluation.report import ArmOutcome, build_report
from pipelines.read.execute import run_statement
from pipelines.read.find import estimate_tokens, find, find_transaction, pack
from pipelines.resources.database import Database, open_database
from pipelines.resources.embedder import EmbedderResource, QuestionEmbedder
from pipelines.errors import InputError
from pipelines.resources.read_servers import ReadServers
from pipelines.write.progress import step_progress

DEFAULT_CUTOFFS = (2, 5, 10)
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Retrieved:
    """One answer of an arm: its evidence rows' sources, and the lines find packed into the budget
    (None for a ranking arm, whose chunks' text is read after the timed call)."""

    sources: list[EvidenceSource]
    lines: tuple[str, ...] | None


# (question text, the caller's scopes or None for the owner) -> what the arm retrieved.
Retriever = Callable[[str, Sequence[str] | None], Retrieved]


@dataclass(frozen=True)
class EvaluationRequest:
    dataset: Path
    # The code location whose write side builds the dataset's database.
    definitions: dg.Definitions
    split: Split = "dev"
    queries: int | None = None
    arms: tuple[str, ...] = ()
    cutoffs: tuple[int, ...] = DEFAULT_CUTOFFS
    lanes_files: tuple[Path, ...] = ()
    config_path: Path = field(default_factory=default_config_path)
    # Tests pass their own schema; otherwise each dataset gets its own database.
    database_url: str | None = None
    rebuild: bool = False


class QuestionVectors:
    """An embedder that answers from vectors computed once for the evaluated questions."""

    def __init__(self, embedder: QuestionEmbedder, questions: Sequence[str]) -> None:
        self.model_id = embedder.model_id
        self.dimension = embedder.dimension
        self._embedder = embedder
        self._vectors = dict(zip(questions, embedder.embed_questions(list(questions)), strict=True))

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        missing = [question for question in questions if question not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._embedder.embed_questions(missing), strict=True))
        return np.stack([self._vectors[question] for question in questions])


def _find_retriever(database: Database | ReadServers, arm: Arm, embedder: QuestionEmbedder, depth: int) -> Retriever:
    # Enough rows for every cutoff: a k below the deepest cutoff would cap Recall@k by construction.
    k = max(arm.config.settings.k, depth)

    def retrieve(question: str, scopes: Sequence[str] | None) -> Retrieved:
        result = find(database, question, k=k, config=arm.config, embedder=embedder, scopes=scopes)
        return Retrieved(
            [(candidate.document_id, candidate.source_chunk_id) for candidate in result.evidence],
            tuple(candidate.line for candidate in result.evidence),
        )

    return retrieve


def _ranking_retriever(database: Database, arm: Arm, embedder: QuestionEmbedder) -> Retriever:
    assert arm.ranking is not None
    ranking = ranking_statement(arm.config, arm.ranking)

    def retrieve(question: str, scopes: Sequence[str] | None) -> Retrieved:
        vector = embedder.embed_questions([question])[0]
        # The ranking as it runs inside find: same plan mode, same HNSW search depth.
        with find_transaction(database, arm.config, scopes) as connection:
            rows = run_statement(connection, ranking.statement, ranking.values(arm.config, question, vector))
        return Retrieved([(None, chunk_id) for chunk_id in ranking.chunk_ids(rows)], None)

    return retrieve


def _ppr_retriever(database: Database, arm: Arm, embedder: QuestionEmbedder) -> Retriever:
    # The graph a caller sees is read once per arm and caller; the walk itself is what each
    # question's latency measures.
    graphs: dict[tuple[str, ...] | None, EntityGraph] = {}

    def graph_for(scopes: Sequence[str] | None) -> EntityGraph:
        key = tuple(scopes) if scopes is not None else None
        if key not in graphs:
            with database.connection(scopes) as connection:
                graphs[key] = load_entity_graph(connection, arm.config.settings.bridge_fanout)
        return graphs[key]

    def retrieve(question: str, scopes: Sequence[str] | None) -> Retrieved:
        vector = embedder.embed_questions([question])[0]
        graph = graph_for(scopes)
        with find_transaction(database, arm.config, scopes) as connection:
            chunk_ids = ppr_ranking(connection, graph, question, vector)
        return Retrieved([(None, chunk_id) for chunk_id in chunk_ids], None)

    return retrieve


def _prompt(database: Database, arm: Arm, retrieved: Retrieved) -> str:
    """The evidence text a prompt of the arm's token budget would hold."""
    lines = retrieved.lines
    if lines is None:
        with database.connection() as connection:
            passages = chunk_passages(connection, [chunk_id for _, chunk_id in retrieved.sources if chunk_id])
        lines, _, _ = pack(passages, arm.config.settings.budget_tokens, estimate_tokens)
    return "\n".join(lines)


def run_arm(
    database: Database,
    arm: Arm,
    questions: Sequence[Question],
    *,
    embedder: QuestionEmbedder,
    chunk_documents: dict[str, str],
    depth: int,
    reads: ReadServers | None = None,
    answered: Callable[[int], None] = lambda count: None,
) -> ArmOutcome:
    """Every question through the arm, telling `answered` how many are done; find arms read from
    `reads` when given."""
    if arm.ranking == PPR_ARM:
        retrieve = _ppr_retriever(database, arm, embedder)
    elif arm.ranking:
        retrieve = _ranking_retriever(database, arm, embedder)
    else:
        retrieve = _find_retriever(reads or database, arm, embedder, depth)
    # One untimed call per caller compiles and prepares the statement (and reads a caller's
    # graph), so latency measures answering only.
    for scopes in dict.fromkeys(_caller(question) for question in questions):
        retrieve(questions[0].text, scopes)
    rankings: dict[str, list[str]] = {}
    latencies_ms: list[float] = []
    prompts: dict[str, str] = {}
    for count, question in enumerate(questions, start=1):
        started = time.perf_counter()
        retrieved = retrieve(question.text, _caller(question))
        latencies_ms.append((time.perf_counter() - started) * 1000)
        rankings[question.id] = passage_ranking(retrieved.sources, chunk_documents)
        prompts[question.id] = _prompt(database, arm, retrieved)
        answered(count)
    return ArmOutcome(arm.name, rankings, latencies_ms, prompts)


def _caller(question: Question) -> tuple[str, ...] | None:
    """The scopes a question is asked with; None (the owner) when it names none."""
    return question.scopes or None


def _checked_cutoffs(cutoffs: Sequence[int]) -> tuple[int, ...]:
    if not cutoffs or any(k < 1 for k in cutoffs):
        raise InputError(f"--k takes positive cutoffs such as 2,5,10, got {','.join(map(str, cutoffs)) or 'none'}")
    return tuple(sorted(set(cutoffs)))


def evaluate(request: EvaluationRequest, progress: Progress = lambda _: None) -> dict[str, object]:
    """Build (or reuse) the dataset's database, run every arm on the chosen questions, return the report."""
    cutoffs = _checked_cutoffs(request.cutoffs)
    dataset = load_dataset(request.dataset)
    config = load_config(request.config_path)
    questions = dataset.questions_in(request.split, request.queries)
    if not questions:
        raise InputError(f"{request.dataset}: no {request.split} questions to evaluate")
    arms = choose_arms(config, request.arms, request.lanes_files)
    url = ensure_built(dataset, request.definitions, progress, request.database_url, rebuild=request.rebuild)
    depth = ranking_depth(cutoffs)
    outcomes = []
    with open_database(request.config_path, url=url) as database, ExitStack() as opened:
        # Read servers hold every database of their primary, the evaluation's own included.
        reads = ReadServers.from_environment(database)
        if reads is not None:
            opened.enter_context(reads)
        with database.connection() as connection:
            chunk_documents = load_chunk_documents(connection)
        embedder = QuestionVectors(EmbedderResource.from_settings(config.pipeline.embedding).get_embedder(), [question.text for question in questions])
        for arm in arms:
            outcomes.append(
                run_arm(database, arm, questions, embedder=embedder, chunk_documents=chunk_documents, depth=depth,
                        reads=reads, answered=step_progress(f"arm {arm.name}", len(questions), "questions", progress))
            )
    return build_report(dataset.name, request.split, questions, outcomes, cutoffs)
