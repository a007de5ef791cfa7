"""find: one question, one execution of the compiled statement, evidence packed into a budget.

Steps: embed the question; execute the find statement once (named entities are found inside it,
exactly and by trigram); drop a source excerpt that a better-ranked settled fact from the same chunk
already covers; pack greedily in rank order into the token budget (skip what does not fit, keep
going). find only reads: its transaction is READ ONLY, so a hot standby can serve it. Which facts it
returned is `FindResult.accessed_fact_ids`; the caller records that on the primary afterwards
(pipelines/read/access.py), so ranking by access frequency and recency keeps learning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from operator import attrgetter
from typing import TypeVar

import psycopg

from pipelines.config import LanegraphConfig, load_config
from pipelines.lanes_config import MAX_INTEGER_SETTING
from pipelines.read.compiler import RESULT_COLUMNS, bind_values, compile_find
from pipelines.read.execute import run_statement
from pipelines.resources.database import Database
from pipelines.resources.embedder import EmbedderResource, QuestionEmbedder
from pipelines.errors import InputError
from pipelines.resources.read_servers import ReadServers

MAX_QUESTION_CHARS = 4000
# Anything packed into a token budget: find's candidates, or the evaluation's plain passages.
Packed = TypeVar("Packed")
# The settings find runs its statement under, each for the rest of its transaction (set_config's
# `true`). Generic and custom plans return the same rows (the validator proves it); the generic plan
# skips re-planning a statement this size on every question (measured: 20-35 ms a call).
PLAN_CACHE_MODE = "force_generic_plan"
# Find is one short statement served to many clients at once: at a million chunks the generic plan
# gathers the title lookup from two parallel workers, whose start-up cost more than the lookup
# (measured: ~15 ms a call), and the workers' cores belong to the other clients anyway.
PARALLEL_WORKERS = "0"
# An HNSW scan returns at most hnsw.ef_search rows (40 by default) unless it scans iteratively:
# searching at least as deep as the ANN windows lets every window fill, whatever a setting cuts it
# to. Deeper (`ann_search_depth`) buys exactness on large tables: 1M synthetic bench chunks gave
# 64% of the exact 40 nearest at 100 (2.3 ms a probe), 86% at 200 (4.9 ms).
# pg_trgm's `%` (the trigram index condition of fuzzy mentions) admits names at
# pg_trgm.similarity_threshold, 0.3 by default, and the template then keeps those at
# mention_fuzzy_similarity. Raising the threshold to that setting lets the index prune with it:
# the same rows, a third of the time on MuSiQue's 80-160 question terms.
ENTER_SETTINGS = "SELECT set_config(name, value, true) FROM unnest(%s::text[], %s::text[]) AS s(name, value)"
READ_SETTINGS = "SELECT name, current_setting(name) FROM unnest(%s::text[]) AS s(name)"
# Statements whose validity ended, with no live fact saying the same: a summary or passage that
# quotes one states something no longer true.
NO_LONGER_VALID = """
SELECT DISTINCT fact.statement
FROM fact
WHERE fact.recorded_to IS NULL AND fact.valid_to <= now()
  AND NOT EXISTS (SELECT 1 FROM live_fact WHERE live_fact.statement = fact.statement)
"""


@dataclass(frozen=True)
class Candidate:
    """One row of the find statement, in statement order (`rank` 0 is the best)."""

    rank: int
    lane: str
    kind: str
    evidence_id: str
    line: str
    scopes: tuple[str, ...]
    fact_id: str | None
    source_chunk_id: str | None
    source_title: str | None
    source_uri: str | None
    document_id: str | None
    document_created_at: datetime | None
    direct: bool
    stance: str | None

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.line)


@dataclass(frozen=True)
class FindResult:
    question: str
    evidence: tuple[Candidate, ...]
    candidates: tuple[Candidate, ...]
    covered: tuple[Candidate, ...]
    over_budget: tuple[Candidate, ...]
    tokens_used: int
    budget: int
    # With read servers: the one that answered, and the ones skipped on the way (then "" = none).
    served_by: str = ""
    degraded_reason: str = ""

    @property
    def accessed_fact_ids(self) -> tuple[str, ...]:
        """The facts handed to the caller: what access recording counts."""
        return tuple(c.fact_id for c in self.evidence if c.fact_id)

    def to_json(self) -> dict:
        def row(candidate: Candidate) -> dict:
            fields = dict(candidate.__dict__)
            fields["scopes"] = list(candidate.scopes)
            created = candidate.document_created_at
            fields["document_created_at"] = created.isoformat() if created else None
            fields["tokens"] = candidate.tokens
            return fields

        return {
            "question": self.question,
            "evidence": [row(c) for c in self.evidence],
            "dropped_as_covered": [c.evidence_id for c in self.covered],
            "skipped_over_budget": [c.evidence_id for c in self.over_budget],
            "candidates": len(self.candidates),
            "tokens_used": self.tokens_used,
            "budget": self.budget,
            "served_by": self.served_by,
            "degraded_reason": self.degraded_reason,
        }


def estimate_tokens(text: str) -> int:
    """Rough prompt cost: four UTF-8 bytes per token, at least one (the fusion engine's rule)."""
    return max(1, len(text.encode("utf-8")) // 4)


def find(
    database: Database | ReadServers,
    question: str,
    *,
    k: int | None = None,
    budget: int | None = None,
    config: LanegraphConfig | None = None,
    embedder: QuestionEmbedder | None = None,
    scopes: Sequence[str] | None = None,
) -> FindResult:
    """Answer-ready evidence for `question`, best first, within `budget` tokens.

    `k` and `budget` default to the settings. `scopes` are the caller's: row-level security then
    confines the statement to rows whose every scope the caller holds; None reads as the owner
    (every row). Nothing is written; record `accessed_fact_ids` with `record_access`.

    Given `ReadServers`, the statement runs on the next read server in turn that is up and not
    lagging, else on the primary; `served_by` and `degraded_reason` say which and why."""
    if isinstance(database, ReadServers):
        result, outcome = database.run(
            lambda server: find(
                server, question, k=k, budget=budget, config=config, embedder=embedder, scopes=scopes
            )
        )
        return replace(result, served_by=outcome.server, degraded_reason=outcome.degraded_reason)
    config = config or load_config()
    question = checked_question(question)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise InputError(f"k must be a positive integer (the sources and facts lanes keep k rows), got {k!r}")
    if k is not None and k > MAX_INTEGER_SETTING:
        raise InputError(f"k must be at most {MAX_INTEGER_SETTING:,} (it is bound into the find statement), got {k:,}")
    budget = config.settings.budget_tokens if budget is None else budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InputError(f"budget must be a positive number of tokens, got {budget!r}")
    statement = compile_find(config)
    vector = (embedder or EmbedderResource.from_settings(config.pipeline.embedding).get_embedder()).embed_questions([question])[0]
    values = bind_values(config, question=question, query_vector=vector, k=k)
    with find_transaction(database, config, scopes) as connection:
        candidates = _candidates(config, run_statement(connection, statement, values))
        kept, covered = drop_covered_sources(candidates)
        evidence, over_budget, used = pack(kept, budget)
    return FindResult(question, evidence, candidates, covered, over_budget, used, budget)


@contextmanager
def find_transaction(
    database: Database, config: LanegraphConfig, scopes: Sequence[str] | None = None
) -> Iterator[psycopg.Connection]:
    """The transaction find runs its statement in: the caller's scopes and find's settings. Whoever
    explains or measures find as it runs opens this same transaction."""
    with database.connection(scopes) as connection:
        enter_find_settings(connection, config)
        yield connection


def find_settings(config: LanegraphConfig) -> dict[str, str]:
    # Read-only proves on the primary that find writes nothing (a standby refuses writes anyway).
    # It is a setting like the others (SET TRANSACTION READ ONLY sets it), so one round trip enters
    # them all: find waits for each round trip it makes before its statement.
    return {
        "transaction_read_only": "on",
        "plan_cache_mode": PLAN_CACHE_MODE,
        "max_parallel_workers_per_gather": PARALLEL_WORKERS,
        "hnsw.ef_search": str(config.settings.ann_search_depth),
        "pg_trgm.similarity_threshold": str(fuzzy_mention_threshold(config)),
    }


def enter_find_settings(connection: psycopg.Connection, config: LanegraphConfig) -> None:
    """Find's settings, for the rest of the current transaction (for a long-lived connection that
    runs find many times, as the benchmark's do)."""
    settings = find_settings(config)
    connection.execute(ENTER_SETTINGS, (list(settings), list(settings.values())))


def settings_in_force(connection: psycopg.Connection, names: Sequence[str]) -> dict[str, str]:
    """What the server says the named settings are now: a report of them, not an echo."""
    return dict(connection.execute(READ_SETTINGS, (list(names),)).fetchall())


def fuzzy_mention_threshold(config: LanegraphConfig) -> float:
    """The lowest mention_fuzzy_similarity any lane matches names at (a lane may override it)."""
    overrides = [
        lane.settings.mention_fuzzy_similarity
        for lane in config.lanes.values()
        if "mention_fuzzy_similarity" in lane.overrides
    ]
    return min([config.settings.mention_fuzzy_similarity, *overrides])


def checked_question(question: str) -> str:
    """The question as find can send it, or an `InputError` saying why not."""
    if not isinstance(question, str):
        raise InputError(f"the question must be text, got {type(question).__name__}")
    if not question.strip():
        raise InputError("the question is empty")
    if "\x00" in question:
        raise InputError("the question contains a NUL character, which PostgreSQL text cannot hold")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as error:
        # Python turns invalid UTF-8 bytes on a command line into lone surrogates.
        raise InputError(f"the question is not valid UTF-8 text (at character {error.start + 1})") from None
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(question)} characters; the limit is {MAX_QUESTION_CHARS}")
    return question


def _candidates(config: LanegraphConfig, rows: Sequence[tuple]) -> tuple[Candidate, ...]:
    candidates = []
    for rank, row in enumerate(rows):
        fields = dict(zip(RESULT_COLUMNS, row, strict=True))
        fields["scopes"] = tuple(fields["scopes"] or ())
        fields["direct"] = bool(fields["direct"])
        candidates.append(Candidate(rank=rank, kind=config.lanes[fields["lane"]].kind, **fields))
    return tuple(candidates)


def drop_covered_sources(
    candidates: Sequence[Candidate],
) -> tuple[tuple[Candidate, ...], tuple[Candidate, ...]]:
    """Drop a source excerpt whose chunk a better-ranked settled fact already stands for."""
    settled_chunks: set[str] = set()
    kept: list[Candidate] = []
    covered: list[Candidate] = []
    for candidate in candidates:
        if candidate.fact_id and candidate.stance == "settled" and candidate.source_chunk_id:
            settled_chunks.add(candidate.source_chunk_id)
        if (
            candidate.kind == "sources"
            and candidate.fact_id is None
            and candidate.source_chunk_id in settled_chunks
        ):
            covered.append(candidate)
        else:
            kept.append(candidate)
    return tuple(kept), tuple(covered)


def pack(
    candidates: Sequence[Packed], budget: int, tokens: Callable[[Packed], int] = attrgetter("tokens")
) -> tuple[tuple[Packed, ...], tuple[Packed, ...], int]:
    """Greedy in rank order: take what fits, skip what does not and keep going.

    Find's evidence comes from lanes of very different lengths (a fact is a line, a summary a
    paragraph), so one long item must not keep the shorter ones ranked after it out of the prompt;
    what it skips is returned, and reported as over budget. Fusion's budget (`fusion.engine`) stops
    at the first item that does not fit instead, because its answer is a ranking."""
    used = 0
    taken: list[Packed] = []
    skipped: list[Packed] = []
    for candidate in candidates:
        cost = tokens(candidate)
        if used + cost <= budget:
            taken.append(candidate)
            used += cost
        else:
            skipped.append(candidate)
    return tuple(taken), tuple(skipped), used


def quoting_invalid_facts(
    database: Database, evidence: Sequence[Candidate], scopes: Sequence[str] | None = None
) -> set[str]:
    """The evidence ids whose line quotes a fact that is no longer valid (a summary or passage
    written before the change); facts-lane lines are live facts and never do."""
    with database.connection(scopes) as connection:
        statements = [statement for (statement,) in connection.execute(NO_LONGER_VALID)]
    return {
        candidate.evidence_id
        for candidate in evidence
        if candidate.fact_id is None and any(statement in candidate.line for statement in statements)
    }
