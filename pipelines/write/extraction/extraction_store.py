"""Writes one document's extraction into the graph: resolve entities, replace facts, supersede states.

Run per document inside one transaction, so a document's facts are either all replaced or not at
all. Re-running an unchanged document changes nothing: identical believed statements are kept
(the unique index absorbs the insert), and only statements the document no longer makes are closed.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

import psycopg

from pipelines.write.extraction import extraction_sql as q
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText, ExtractedFact, Mention
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


def fact_base_id(fact: ExtractedFact, subject_id: str, object_id: str | None, chunk_id: str) -> str:
    key = "\x1f".join(
        [fact.statement.lower(), subject_id, fact.predicate, object_id or "", fact.object_value or "", chunk_id]
    )
    return "f-" + hashlib.sha256(key.encode()).hexdigest()[:20]


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
    return datetime.combine(day, time.min, tzinfo=UTC) if day else None


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


def _resolve_entities(
    connection: psycopg.Connection, canonical: dict[str, Mention], scopes: list[str], counts: DocumentCounts
) -> dict[str, str]:
    """normalised name -> entity id among the entities of the document's scope set, creating
    entities and recording aliases as needed."""
    distinct = {mention.normalized_name: mention for mention in canonical.values()}
    by_canonical: dict[str, str] = {}
    aliases: set[tuple[str, str]] = set()
    new: list[Mention] = []
    (setting_before,) = connection.execute(q.SEQUENTIAL_SCANS).fetchone()
    connection.execute(q.SET_SEQUENTIAL_SCANS, {"setting": "off"})
    matches = connection.execute(
        q.RESOLVE_MENTIONS,
        {"normalized": list(distinct), "kinds": [mention.kind for mention in distinct.values()], "scopes": scopes},
    ).fetchall()
    connection.execute(q.SET_SEQUENTIAL_SCANS, {"setting": setting_before})
    for normalized, found, via_alias in matches:
        if found is None:
            new.append(distinct[normalized])
        elif via_alias:
            aliases.add((found, normalized))
        by_canonical[normalized] = found
    if new:
        by_canonical.update(connection.execute(q.INSERT_ENTITIES, {
            "ids": [entity_id(mention.kind, mention.normalized_name, scopes) for mention in new],
            "names": [mention.name for mention in new],
            "kinds": [mention.kind for mention in new],
            "normalized": [mention.normalized_name for mention in new],
            "scopes": scopes,
        }).fetchall())
        counts.entities_created += len(new)
    resolved = {name: by_canonical[mention.normalized_name] for name, mention in canonical.items()}
    aliases.update((resolved[name], name) for name, mention in canonical.items() if name != mention.normalized_name)
    if aliases:
        found_ids, alias_names = zip(*sorted(aliases))
        connection.execute(q.ADD_ALIASES, {"ids": list(found_ids), "aliases": list(alias_names)})
    ids = sorted(set(resolved.values()))
    for loser, winner in connection.execute(q.PROJECT_SHORT_NAMES, {"ids": ids}).fetchall():
        merge_entities(connection, loser, winner)
        counts.entities_merged += 1
        resolved = {name: winner if found == loser else found for name, found in resolved.items()}
    return resolved


def merge_entities(connection: psycopg.Connection, loser: str, winner: str) -> None:
    """Fold `loser` into `winner`: its facts, mentions, name (as an alias) and scopes move over."""
    parameters = {"loser": loser, "winner": winner}
    for statement in (
        q.MERGE_CLOSE_DUPLICATES, q.MERGE_FACT_SUBJECTS, q.MERGE_FACT_OBJECTS, q.MERGE_MENTIONS,
        q.MERGE_ENTITY, q.DELETE_ENTITY,
    ):
        connection.execute(statement, parameters)


def _write_mentions(
    connection: psycopg.Connection, document_id: str, scopes: list[str],
    extractions: Sequence[ChunkExtraction], resolved: dict[str, str],
) -> int:
    tally: Counter = Counter()
    for extraction in extractions:
        for mention in extraction.mentions:
            tally[(resolved[mention.normalized_name], extraction.chunk_id, mention.name, mention.kind)] += 1
        for hint in extraction.kind_hints:
            if hint.normalized_name in resolved:
                tally[(resolved[hint.normalized_name], extraction.chunk_id, hint.name, hint.kind)] += ROLE_HINT_WEIGHT
    connection.execute(q.REPLACE_DOCUMENT_MENTIONS, {"document_id": document_id})
    with connection.cursor().copy(
        "COPY entity_mention (entity_id, chunk_id, document_id, name, kind, mentions, scopes) FROM STDIN"
    ) as copy:
        for (entity, chunk_id, name, kind), mentions in sorted(tally.items()):
            copy.write_row((entity, chunk_id, document_id, name, kind, mentions, scopes))
    return sum(tally.values())


# The columns of a row of _staged_fact_rows, as STATED_FACTS names their arrays.
FACT_COLUMNS = (
    "ids", "subject_ids", "predicates", "object_ids", "object_values", "statements", "source_chunk_ids",
    "valid_froms", "valid_tos",
)


def _staged_fact_rows(
    extractions: Sequence[ChunkExtraction], resolved: dict[str, str]
) -> list[tuple]:
    """Fact rows, one per key of the unique index (which ignores object_value, so of two values
    one sentence gives the same subject and predicate the first is kept). A sentence repeated by
    overlapping chunks counts once, from the first chunk that holds it."""
    rows: dict[tuple, tuple] = {}
    for extraction in extractions:
        for fact in extraction.facts:
            subject_id = resolved[fact.subject.normalized_name]
            object_id = resolved[fact.object.normalized_name] if fact.object else None
            key = (fact.statement.lower(), subject_id, fact.predicate, object_id or "")
            if subject_id == object_id or key in rows:
                continue
            rows[key] = (
                fact_base_id(fact, subject_id, object_id, extraction.chunk_id), subject_id, fact.predicate,
                object_id, fact.object_value, fact.statement, extraction.chunk_id,
                _day_start(fact.valid_from), _day_start(fact.valid_to),
            )
    return list(rows.values())


def _supersede(connection: psycopg.Connection, staged: list[tuple]) -> int:
    groups = set()
    for _, subject_id, predicate, object_id, *_ in staged:
        side = functional_side(predicate)
        if side == "subject":
            groups.add((side, subject_id, predicate))
        elif side == "object" and object_id:
            groups.add((side, object_id, predicate))
    if not groups:
        return 0
    sides, keys, predicates = (list(column) for column in zip(*sorted(groups)))
    superseded = connection.execute(
        q.SUPERSEDED_FACTS, {"sides": sides, "keys": keys, "predicates": predicates}
    ).fetchall()
    if not superseded:
        return 0
    ids = [fact_id for fact_id, _ in superseded]
    connection.execute(q.CLOSE_FACTS, {"ids": ids})
    connection.execute(q.RERECORD_WITH_END, {"ids": ids, "ends": [end for _, end in superseded]})
    return len(ids)


def write_document_extraction(
    connection: psycopg.Connection,
    document_id: str,
    scopes: list[str],
    extractions: Sequence[ChunkExtraction],
    merge_similarity: float,
) -> DocumentCounts:
    """Replace the document's mentions and facts with this extraction; call inside a transaction."""
    counts = DocumentCounts()
    connection.execute(q.GRAPH_WRITE_LOCK)
    connection.execute(q.SET_SIMILARITY_THRESHOLD, {"threshold": str(merge_similarity)})
    canonical = canonical_mentions(
        [m for e in extractions for m in e.mentions]
        + [m for e in extractions for f in e.facts for m in (f.subject, f.object) if m is not None],
        [hint for e in extractions for hint in e.kind_hints],
        [alias for e in extractions for alias in e.aliases],
    )
    resolved = _resolve_entities(connection, canonical, scopes, counts) if canonical else {}
    counts.mentions = _write_mentions(connection, document_id, scopes, extractions, resolved)
    staged = _staged_fact_rows(extractions, resolved)
    counts.facts_stated = len(staged)
    stated = {column: [row[index] for row in staged] for index, column in enumerate(FACT_COLUMNS)}
    counts.facts_closed = connection.execute(q.CLOSE_UNSTATED_FACTS, {**stated, "document_id": document_id}).rowcount
    counts.facts_inserted = connection.execute(
        q.INSERT_STATED_FACTS, {**stated, "document_id": document_id, "scopes": scopes}
    ).rowcount
    counts.facts_superseded = _supersede(connection, staged)
    return counts


def retract_document_extraction(connection: psycopg.Connection, document_id: str) -> DocumentCounts:
    """A retracted or emptied document stops stating anything: its facts close, its mentions go."""
    connection.execute(q.GRAPH_WRITE_LOCK)
    closed = connection.execute(q.CLOSE_DOCUMENT_FACTS, {"document_id": document_id}).rowcount
    connection.execute(q.REPLACE_DOCUMENT_MENTIONS, {"document_id": document_id})
    return DocumentCounts(facts_closed=closed, retracted=True)


def chunk_texts(rows: Iterable[tuple[str, str, str, str, str, str, str, date | None]]) -> dict[str, list[ChunkText]]:
    """document id -> its chunks in order, from (chunk id, document id, text, title name, title
    qualifier, speaker, addressee, day said) rows; the last three are a conversation turn's."""
    chunks: dict[str, list[ChunkText]] = defaultdict(list)
    for chunk_id, document_id, text, title_name, title_qualifier, speaker, addressee, observed_on in rows:
        chunks[document_id].append(ChunkText(chunk_id, text, title_name, title_qualifier, speaker, addressee, observed_on))
    return chunks
