"""Writes documents' extractions into the graph: each document is staged (its canonical names,
mentions and facts, made without a lock), a batch of staged documents has its names resolved
against the graph as committed, still without the lock, then it is merged in one transaction and
one round trip under the graph write lock: entities resolved one document after another (probing
again only the names something written since may answer differently), then facts replaced and
states superseded for many documents at once (migrations 0111, 0113 and 0114). The new entities'
names enter the trigram index in bulk after the commit, outside the lock (0116).

A batch's facts are either all replaced or not at all. Re-running an unchanged document changes
nothing: identical believed statements are kept (the unique index absorbs the insert), and only
statements the document no longer makes are closed.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import psycopg

from pipelines.write.extraction import extraction_sql as q
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText, Mention
from pipelines.write.extraction.ontology import (
    ENTITY_KINDS, ROLE_HINT_WEIGHT, normalize_entity_name, project_alias_key,
)

# Single-valued predicates and the endpoint that keys them: a project has one lead at a time
# (keyed by the object of "lead"), an entity one status (keyed by its subject).
FUNCTIONAL_PREDICATES = {
    "status": "subject",
    "lead": "object",
    "based_in": "subject",
    "located_in": "subject",
    "built_in": "subject",
    "have_headquarters_in": "subject",
}
# "X supplies the lidar for Project Tessel": one lidar supplier per project at a time.
FUNCTIONAL_PATTERNS = [(re.compile(r"^supply_[a-z0-9_]+_for$"), "object")]
_WITHOUT_PUNCTUATION = re.compile(r"[^\w\s]")
# Ties in the kind vote go to the kind listed first.
KIND_PRIORITY = list(ENTITY_KINDS)


def functional_side(predicate: str) -> str | None:
    if predicate in FUNCTIONAL_PREDICATES:
        return FUNCTIONAL_PREDICATES[predicate]
    return next((side for pattern, side in FUNCTIONAL_PATTERNS if pattern.match(predicate)), None)


def entity_id(kind: str, normalized_name: str, scopes: Sequence[str] = ()) -> str:
    """One id per (kind, name, scope set); public entities keep the id they had before scope sets."""
    key = f"{kind}\x1f{normalized_name}"
    if scopes:
        key += "\x1e" + "\x1f".join(sorted(scopes))
    return "e-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def canonical_mentions(
    mentions: Iterable[Mention], kind_hints: Iterable[Mention] = (), aliases: Iterable[tuple[str, Mention]] = ()
) -> dict[str, Mention]:
    """One mention per normalised name: the kind most of the document's mentions give it (a name's
    form, such as "Project X", has already decided its kind), spelled as it appears most often; a
    project's short name ("Heron") stands for the project when the document names it ("Project Heron").
    Other names of one entity within the document stand for it too (see `_same_entity_names`)."""
    kinds: dict[str, Counter] = defaultdict(Counter)
    spellings: dict[str, Counter] = defaultdict(Counter)
    for mention in mentions:
        kinds[mention.normalized_name][mention.kind] += 1
        spellings[mention.normalized_name][mention.name] += 1
    for hint in kind_hints:
        if hint.normalized_name in kinds:
            kinds[hint.normalized_name][hint.kind] += ROLE_HINT_WEIGHT
    canonical = {}
    for normalized, votes in kinds.items():
        kind = min(votes, key=lambda k: (-votes[k], KIND_PRIORITY.index(k)))
        name = min(spellings[normalized], key=lambda s: (-spellings[normalized][s], s))
        canonical[normalized] = Mention(name, kind)
    for normalized, mention in list(canonical.items()):
        short = project_alias_key(normalized)
        if mention.kind == "project" and short in canonical and canonical[short].kind != "project":
            canonical[short] = mention
    counts = {normalized: sum(votes.values()) for normalized, votes in kinds.items()}
    for name, stands_for in _same_entity_names(canonical, counts, aliases).items():
        canonical[name] = canonical[stands_for]
    return canonical


def _same_entity_names(
    canonical: dict[str, Mention], counts: dict[str, int], aliases: Iterable[tuple[str, Mention]]
) -> dict[str, str]:
    """normalised name -> the normalised name of the entity it stands for in this document: a
    declared acronym ("FBI" of "Federal Bureau of Investigation (FBI)"); a surname alone where the
    document names exactly one person with that surname ("Kennedy", "John F. Kennedy"); a spelling
    that differs only in punctuation ("U.S." and "US"), which goes to the most mentioned spelling."""
    same: dict[str, str] = {}
    for alias, target in aliases:
        key = normalize_entity_name(alias)
        if key and target.normalized_name in canonical and key != target.normalized_name:
            same[key] = target.normalized_name
            canonical.setdefault(key, canonical[target.normalized_name])
    full_names: dict[str, set[str]] = defaultdict(set)
    for normalized, mention in canonical.items():
        words = normalized.split()
        if mention.kind == "person" and len(words) >= 2:
            full_names[words[-1]].add(normalized)
    for normalized in canonical:
        if normalized not in same and len(full_names.get(normalized, ())) == 1:
            same[normalized] = next(iter(full_names[normalized]))
    spellings: dict[str, list[str]] = defaultdict(list)
    for normalized in canonical:
        spellings[_WITHOUT_PUNCTUATION.sub("", normalized)].append(normalized)
    for variants in spellings.values():
        if len(variants) > 1:
            winner = min(variants, key=lambda name: (-counts.get(name, 0), name))
            same.update({name: winner for name in variants if name != winner and name not in same})
    return same


def _day_start(day: date | None) -> datetime | None:
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC) if day else None


@dataclass
class DocumentCounts:
    mentions: int = 0
    entities_created: int = 0
    entities_merged: int = 0
    facts_stated: int = 0
    facts_inserted: int = 0
    facts_closed: int = 0
    facts_superseded: int = 0
    retracted: bool = False


@dataclass
class StagedDocument:
    """One document's extraction as the merge reads it: names, not entity ids, which only the merge
    (under the graph write lock, against the entities the documents before it created) resolves.
    Made without the lock or the database; each list holds rows of one staged table
    (migrations 0110 and 0111)."""

    document_id: str
    scopes: list[str]
    retracted: bool = False
    names: list[tuple] = field(default_factory=list)
    entities: list[tuple] = field(default_factory=list)
    mentions: list[tuple] = field(default_factory=list)
    facts: list[tuple] = field(default_factory=list)


def stage_document(document_id: str, scopes: list[str], extractions: Sequence[ChunkExtraction]) -> StagedDocument:
    """The document's canonical names (`canonical_mentions`), the entity each stands for, its
    mentions tallied per name, and its facts in order, each with the functional side of its predicate."""
    canonical = canonical_mentions(
        [m for e in extractions for m in e.mentions]
        + [m for e in extractions for f in e.facts for m in (f.subject, f.object) if m is not None],
        [hint for e in extractions for hint in e.kind_hints],
        [alias for e in extractions for alias in e.aliases],
    )
    distinct = {mention.normalized_name: mention for mention in canonical.values()}
    tally: Counter = Counter()
    for extraction in extractions:
        for mention in extraction.mentions:
            tally[(mention.normalized_name, extraction.chunk_id, mention.name, mention.kind)] += 1
        for hint in extraction.kind_hints:
            if hint.normalized_name in canonical:
                tally[(hint.normalized_name, extraction.chunk_id, hint.name, hint.kind)] += ROLE_HINT_WEIGHT
    facts = [
        (
            document_id, ordinal, fact.statement, fact.statement.lower(), fact.subject.normalized_name,
            fact.predicate, fact.object.normalized_name if fact.object else None, fact.object_value,
            chunk_id, _day_start(fact.valid_from), _day_start(fact.valid_to), functional_side(fact.predicate),
        )
        for ordinal, (chunk_id, fact) in enumerate((e.chunk_id, f) for e in extractions for f in e.facts)
    ]
    return StagedDocument(
        document_id, scopes,
        names=[(document_id, name, mention.normalized_name) for name, mention in canonical.items()],
        entities=[
            (document_id, normalized, mention.kind, mention.name, entity_id(mention.kind, normalized, scopes))
            for normalized, mention in distinct.items()
        ],
        mentions=[(document_id, *key, count) for key, count in tally.items()],
        facts=facts,
    )


def stage_retraction(document_id: str, scopes: list[str]) -> StagedDocument:
    """A retracted or emptied document stops stating anything: its facts close, its mentions go."""
    return StagedDocument(document_id, scopes, retracted=True)


@dataclass(frozen=True)
class MergeTiming:
    """Where a merge's time went: copying the staged rows, resolving them ahead of the lock, waiting
    for the graph write lock, and when it was taken (`time.perf_counter`), as the lock is held until
    the caller commits."""

    stage_seconds: float
    resolve_ahead_seconds: float
    lock_wait_seconds: float
    locked_at: float


def merge_documents(
    connection: psycopg.Connection, documents: Sequence[StagedDocument], merge_similarity: float
) -> tuple[dict[str, DocumentCounts], MergeTiming]:
    """Write the staged documents into the graph, in order, inside the caller's transaction: the
    rows are copied into the session's staging tables and their names resolved against the graph
    as committed (once the names written since are in the trigram index), then the graph write lock
    is taken for one call of the merge function (migration 0114) and held until the caller commits;
    the caller then moves the batch's new names into the trigram index (migration 0116)."""
    started = time.perf_counter()
    connection.execute(q.CREATE_STAGING_TABLES)
    cursor = connection.cursor()
    for table, rows in (
        ("lanegraph_staged_document", [(i, d.document_id, d.scopes, d.retracted) for i, d in enumerate(documents)]),
        ("lanegraph_staged_name", [row for d in documents for row in d.names]),
        ("lanegraph_staged_entity", [row for d in documents for row in d.entities]),
        ("lanegraph_staged_mention", [row for d in documents for row in d.mentions]),
        ("lanegraph_staged_fact", [row for d in documents for row in d.facts]),
    ):
        with cursor.copy(q.COPY_STAGED.format(table=table)) as copy:
            for row in rows:
                copy.write_row(row)
    connection.execute(q.ANALYZE_STAGING_TABLES)
    staged = time.perf_counter()
    connection.execute(q.INDEX_PENDING_ENTITY_NAMES)
    connection.execute(q.RESOLVE_STAGED_AHEAD, {"threshold": str(merge_similarity)})
    resolved = time.perf_counter()
    connection.execute(q.GRAPH_WRITE_LOCK)
    locked = time.perf_counter()
    counts = {
        document_id: DocumentCounts(
            mentions=int(mentions), entities_created=created, entities_merged=merged, facts_stated=stated,
            facts_inserted=inserted, facts_closed=closed, facts_superseded=superseded, retracted=retracted,
        )
        for document_id, mentions, created, merged, stated, inserted, closed, superseded, retracted in
        connection.execute(q.MERGE_STAGED, {"threshold": str(merge_similarity)})
    }
    return counts, MergeTiming(staged - started, resolved - staged, locked - resolved, locked)


def chunk_texts(rows: Iterable[tuple[str, str, str, str, str, str, str, date | None]]) -> dict[str, list[ChunkText]]:
    """document id -> its chunks in order, from (chunk id, document id, text, title name, title
    qualifier, speaker, addressee, day said) rows; the last three are a conversation turn's."""
    chunks: dict[str, list[ChunkText]] = defaultdict(list)
    for chunk_id, document_id, text, title_name, title_qualifier, speaker, addressee, observed_on in rows:
        chunks[document_id].append(ChunkText(chunk_id, text, title_name, title_qualifier, speaker, addressee, observed_on))
    return chunks
