"""The graph-wide steps: entity graph upkeep, communities, profiles and the RAPTOR tree.

Each recomputes from the tables. Communities, profiles and the tree are replaced in one
transaction each, so a reader sees the old set or the new one, never a mixture.

Every tenant gets a graph of its own: row security lets a caller read a row only when it holds every
scope of the row, so a summary drawn from two tenants' documents would be readable by neither. An
entity belongs to one scope set (a document's mentions resolve among entities of its own set, see
extraction_store), its facts and profile carry that set, and communities and the RAPTOR tree are
built separately over the entities and chunks of each scope set. A summary's scopes are still the
union of its sources' scopes, which is now that one set: a caller reads the graph of exactly the
documents it may read. An unscoped corpus is a single scope set and builds what it always built.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np

from pipelines.config import CommunitySettings, RaptorSettings
from pipelines.resources.database import Database
from pipelines.write.summaries.summarizer import Summarizer
from pipelines.write.graph import graph_sql as q
from pipelines.write.graph.communities import CommunityNode, leiden_hierarchy
from pipelines.write.extraction.ontology import ENTITY_KINDS
from pipelines.write.progress import Embed, Log, embed_showing_progress, silent, step_progress
from pipelines.write.summaries.raptor import RaptorNode, build_tree

Item = TypeVar("Item")
# Rows embedded and written per round by _embed_missing.
EMBED_BATCH = 512
TOP_ENTITY_COUNT = 10
LABEL_MEMBERS = 3
# The steps' names in progress lines: the assets they build.
GRAPH_STEP = "entity_graph"
COMMUNITIES_STEP = "communities"
PROFILES_STEP = "entity_profiles"
RAPTOR_STEP = "raptor_levels"


def union_scopes(scope_lists: Iterable[Sequence[str]]) -> list[str]:
    return sorted({scope for scopes in scope_lists for scope in scopes})


def by_scope_set(items: Sequence[Item], scopes_of: Callable[[Item], Sequence[str]]) -> list[list[Item]]:
    """The items grouped by their exact scope set, groups in scope-set order, items in their order."""
    groups: dict[tuple[str, ...], list[Item]] = {}
    for item in items:
        groups.setdefault(tuple(sorted(scopes_of(item))), []).append(item)
    return [groups[scopes] for scopes in sorted(groups)]


@dataclass
class GraphReport:
    kinds_reconciled: int = 0
    orphans_deleted: int = 0
    degrees_updated: int = 0
    facts_embedded: int = 0
    entities_embedded: int = 0
    kinds_embedded: int = 0
    statistics: dict[str, int] = field(default_factory=dict)
    top_entities: list[tuple] = field(default_factory=list)
    kinds: list[tuple[str, int]] = field(default_factory=list)


def _embed_missing(
    database: Database, select: str, update: str, text_of: Callable[[tuple], str], key_of: Callable[[tuple], dict],
    embed: Embed, log: Log, what: str,
) -> int:
    with database.connection() as connection:
        rows = connection.execute(select).fetchall()
    advance = step_progress(GRAPH_STEP, len(rows), f"{what} embedded", log)
    for start in range(0, len(rows), EMBED_BATCH):
        batch = rows[start : start + EMBED_BATCH]
        vectors = embed_showing_progress(embed, [text_of(row) for row in batch], advance, done_before=start)
        with database.connection() as connection:
            connection.cursor().executemany(update, [{**key_of(row), "embedding": v} for row, v in zip(batch, vectors)])
    return len(rows)


def entity_text(name: str, kind: str) -> str:
    """What an entity's embedding encodes: its name and what kind of thing it is."""
    return f"{name} ({kind})"


def kind_text(name: str, description: str) -> str:
    """What a kind's embedding encodes, for the entity_catalog lane's ranking of kinds by question."""
    return f"{name}: {description}"


def refresh_entity_graph(database: Database, embed: Embed, log: Log = silent) -> GraphReport:
    report = GraphReport()
    with database.connection() as connection, connection.transaction():
        report.kinds_reconciled = connection.execute(q.RECONCILE_KINDS, {"kind_priority": list(ENTITY_KINDS)}).rowcount
        report.orphans_deleted = connection.execute(q.DELETE_ORPHAN_ENTITIES).rowcount
        report.degrees_updated = connection.execute(q.UPDATE_DEGREES).rowcount
    report.facts_embedded = _embed_missing(
        database, q.FACT_STATEMENTS_WITHOUT_EMBEDDING, q.SET_FACT_EMBEDDING,
        lambda row: row[0], lambda row: {"ids": row[1]}, embed, log, "fact statements",
    )
    report.entities_embedded = _embed_missing(
        database, q.ENTITIES_WITHOUT_EMBEDDING, q.SET_ENTITY_EMBEDDING,
        lambda row: entity_text(row[1], row[2]), lambda row: {"id": row[0]}, embed, log, "entities",
    )
    report.kinds_embedded = _embed_missing(
        database, q.KINDS_WITHOUT_EMBEDDING, q.SET_KIND_EMBEDDING,
        lambda row: kind_text(row[0], row[1]), lambda row: {"name": row[0]}, embed, log, "entity kinds",
    )
    with database.connection() as connection:
        cursor = connection.execute(q.GRAPH_STATISTICS)
        report.statistics = dict(zip([column.name for column in cursor.description], cursor.fetchone()))
        report.top_entities = connection.execute(q.TOP_ENTITIES, {"limit": TOP_ENTITY_COUNT}).fetchall()
        report.kinds = connection.execute(q.ENTITIES_PER_KIND).fetchall()
    return report


def _digest_id(prefix: str, *parts: object) -> str:
    return prefix + hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).hexdigest()[:16]


@dataclass
class CommunityReport:
    communities: int = 0
    connected_entities: int = 0
    covered_entities: int = 0
    sizes_per_level: dict[int, list[int]] = field(default_factory=dict)
    preview: list[tuple[int, str, int, str]] = field(default_factory=list)


def build_communities(
    database: Database, settings: CommunitySettings, summarizer: Summarizer, embed: Embed, log: Log = silent
) -> CommunityReport:
    with database.connection() as connection:
        vertices = [row[0] for row in connection.execute(q.CONNECTED_ENTITIES)]
        edges = connection.execute(q.ENTITY_EDGES).fetchall()
        entities = {row[0]: row for row in connection.execute(q.ENTITY_NAMES, {"ids": vertices})}
    nodes: list[CommunityNode] = []
    partitioned = step_progress(COMMUNITIES_STEP, len(vertices), "entities partitioned by Leiden", log)
    done = 0
    for group in by_scope_set(vertices, lambda vertex: entities[vertex][4]):
        offset = len(nodes)
        nodes += [
            replace(node, parent=None if node.parent is None else node.parent + offset)
            for node in leiden_hierarchy(
                group, edges, max_size=settings.max_size, resolution=settings.resolution,
                max_levels=settings.max_levels, seed=settings.seed,
            )
        ]
        done += len(group)
        partitioned(done)
    summarised = step_progress(COMMUNITIES_STEP, len(nodes), "communities summarised", log)
    rows = []
    with database.connection() as connection:
        for node in nodes:
            members = sorted(node.members, key=lambda m: (-entities[m][3], entities[m][1]))
            label = ", ".join(entities[m][1] for m in members[:LABEL_MEMBERS])
            facts = connection.execute(q.FACTS_AMONG, {"ids": list(node.members)}).fetchall()
            summary = summarizer.summarize([statement for statement, _ in facts], topic=label) or label
            rows.append({
                "id": _digest_id("c", node.level, *sorted(node.members)),
                "level": node.level,
                "label": label,
                "summary": summary,
                "members": sorted(node.members),
                "scopes": union_scopes([entities[m][4] for m in node.members] + [s for _, s in facts]),
                "parent": node.parent,
            })
            summarised(len(rows))
    vectors = embed_showing_progress(
        embed,
        [f"{row['label']}: {row['summary']}" for row in rows],
        step_progress(COMMUNITIES_STEP, len(rows), "communities embedded", log),
    )
    with database.connection() as connection, connection.transaction():
        connection.execute(q.REPLACE_COMMUNITIES)
        for row, vector in zip(rows, vectors):
            parent_id = rows[row["parent"]]["id"] if row["parent"] is not None else None
            connection.execute(q.INSERT_COMMUNITY, {**row, "parent_id": parent_id, "embedding": vector})
    report = CommunityReport(communities=len(rows), connected_entities=len(vertices))
    report.covered_entities = len({m for row in rows for m in row["members"]})
    for row in rows:
        report.sizes_per_level.setdefault(row["level"], []).append(len(row["members"]))
    report.preview = [(row["level"], row["label"], len(row["members"]), row["summary"]) for row in rows[:5]]
    return report


@dataclass
class ProfileReport:
    profiles: int = 0
    preview: list[tuple[str, int, str]] = field(default_factory=list)


def build_profiles(
    database: Database, min_degree: int, summarizer: Summarizer, embed: Embed, log: Log = silent
) -> ProfileReport:
    rows = []
    with database.connection() as connection:
        candidates = connection.execute(q.PROFILE_CANDIDATES, {"min_degree": min_degree}).fetchall()
        advance = step_progress(PROFILES_STEP, len(candidates), "entities summarised", log)
        for done, (entity_id, name, kind, scopes) in enumerate(candidates, start=1):
            facts = connection.execute(q.ENTITY_FACTS, {"id": entity_id}).fetchall()
            if facts:
                summary = summarizer.summarize([statement for statement, _ in facts], topic=name)
                rows.append({
                    "entity_id": entity_id,
                    # The name leads so the profile is found by a question that names the entity.
                    "summary": f"{name} ({kind}): {summary}",
                    "fact_count": len(facts),
                    "scopes": union_scopes([scopes] + [s for _, s in facts]),
                })
            advance(done)
    vectors = embed_showing_progress(
        embed, [row["summary"] for row in rows], step_progress(PROFILES_STEP, len(rows), "profiles embedded", log)
    )
    with database.connection() as connection, connection.transaction():
        connection.execute(q.REPLACE_PROFILES)
        for row, vector in zip(rows, vectors):
            connection.execute(q.INSERT_PROFILE, {**row, "embedding": vector})
    return ProfileReport(len(rows), [(row["entity_id"], row["fact_count"], row["summary"]) for row in rows[:5]])


@dataclass
class RaptorReport:
    leaves: int = 0
    nodes_per_level: dict[int, int] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)


def build_raptor(
    database: Database, settings: RaptorSettings, summarizer: Summarizer, embed: Embed, log: Log = silent
) -> RaptorReport:
    with database.connection() as connection:
        leaves = connection.execute(q.RAPTOR_LEAVES).fetchall()
    nodes: list[RaptorNode] = []
    for group in by_scope_set(leaves, lambda leaf: leaf[3]):
        nodes += build_tree(
            [row[0] for row in group],
            [row[1] for row in group],
            np.asarray([row[2].to_numpy() for row in group], dtype=np.float32).reshape(len(group), -1),
            [row[3] for row in group],
            summarize=summarizer.summarize,
            embed=embed,
            max_levels=settings.max_levels,
            root_count=settings.root_count,
            max_clusters=settings.max_clusters,
            reduced_dimensions=settings.reduced_dimensions,
            covariance=settings.covariance,
            seed=settings.seed,
            step=RAPTOR_STEP,
            log=log,
        )
    with database.connection() as connection, connection.transaction():
        connection.execute(q.REPLACE_RAPTOR)
        for node in nodes:
            connection.execute(q.INSERT_RAPTOR_NODE, {
                "id": node.id, "level": node.level, "summary": node.summary, "children": list(node.children),
                "embedding": node.embedding, "scopes": list(node.scopes),
            })
    report = RaptorReport(leaves=len(leaves))
    for node in nodes:
        report.nodes_per_level[node.level] = report.nodes_per_level.get(node.level, 0) + 1
    top = max(report.nodes_per_level, default=None)
    report.roots = [node.summary for node in nodes if node.level == top]
    return report
