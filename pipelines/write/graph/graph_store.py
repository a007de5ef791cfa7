"""The graph-wide steps: entity graph upkeep, communities, profiles and the RAPTOR tree.

Each recomputes from the tables, in one of two modes. `full` partitions, clusters and summarises
everything again. `incremental` redoes only what the documents changed since the last build
touched: it partitions again only the communities whose entity pairs changed (`split_by_touch`),
adds new chunks to the RAPTOR tree without clustering it again (`update_tree`), and summarises and
gives a vector to only the rows whose source text changed (each row keeps a digest of it; a vector
is the mean of the sources' vectors or the embedded text, see summary_vectors); every other row is
kept as it is, id, summary and embedding. Incremental runs only over a build made with the same
settings (recorded in lanegraph_setting); otherwise the step rebuilds in full. Each step writes its
rows in one transaction, so a reader sees the old set or the new one, never a mixture.

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
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

import numpy as np
from psycopg import Connection, sql

from pipelines.config import CommunitySettings, RaptorSettings
from pipelines.resources.database import Database
from pipelines.resources.migrations import hnsw_indexes_rebuilt
from pipelines.write.summaries.summarizer import Summarizer
from pipelines.write.graph import graph_sql as q
from pipelines.write.graph.communities import CommunityNode, leiden_hierarchy, split_by_touch, touched_vertices
from pipelines.write.extraction.extraction_sql import INDEX_PENDING_ENTITY_NAMES
from pipelines.write.extraction.ontology import ENTITY_KINDS
from pipelines.write.progress import Embed, Log, embed_showing_progress, silent, step_progress
from pipelines.write.summaries.raptor import RaptorNode, build_tree, node_id, update_tree
from pipelines.write.summaries.summaries import source_digest
from pipelines.write.summaries.summary_vectors import SummaryVectors
from pipelines.resources.rows import named_row, one_row

Item = TypeVar("Item")
# Rows embedded and written per round by _embed_missing.
EMBED_BATCH = 512
TOP_ENTITY_COUNT = 10
# Communities or entities whose facts one query reads: a query each cost a round trip per row, most
# of a one-document refresh, and a batch holds its facts (with vectors) in memory.
ROWS_PER_FACT_QUERY = 500
LABEL_MEMBERS = 3
# The steps' names in progress lines: the assets they build.
GRAPH_STEP = "entity_graph"
COMMUNITIES_STEP = "communities"
PROFILES_STEP = "entity_profiles"
RAPTOR_STEP = "raptor_levels"
RebuildMode = Literal["incremental", "full"]


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
    statistics: dict[str, int | float] = field(default_factory=dict)
    top_entities: list[tuple] = field(default_factory=list)
    kinds: list[tuple[str, int]] = field(default_factory=list)


def _embed_missing(
    database: Database, table: str, select: str, update: str, text_of: Callable[[tuple], str],
    key_of: Callable[[tuple], dict], embed: Embed, log: Log, what: str,
) -> int:
    with database.connection() as connection:
        rows = connection.execute(select).fetchall()
        held = one_row(connection.execute(q.EMBEDDED_ROWS.format(sql.Identifier(table))), f"the embedded {what}")[0]
    # Longest first, so each round's texts are of about one length (see embed_showing_progress).
    rows.sort(key=lambda row: -len(text_of(row)))
    advance = step_progress(GRAPH_STEP, len(rows), f"{what} embedded", log)
    if len(rows) > held:
        # A first build: the index is built after the vectors are in. One transaction, so no
        # reader ever finds the table without its index; readers wait for it instead, seconds, once.
        vectors = embed_showing_progress(embed, [text_of(row) for row in rows], advance)
        with (
            database.connection() as connection,
            connection.transaction(),
            hnsw_indexes_rebuilt(connection, table),
        ):
            connection.cursor().executemany(update, [{**key_of(row), "embedding": v} for row, v in zip(rows, vectors)])
        return len(rows)
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
        connection.execute(q.TAKE_GRAPH_WRITE_EPOCH)
        report.kinds_reconciled = connection.execute(q.RECONCILE_KINDS, {"kind_priority": list(ENTITY_KINDS)}).rowcount
        report.orphans_deleted = connection.execute(q.DELETE_ORPHAN_ENTITIES).rowcount
        report.degrees_updated = connection.execute(q.UPDATE_DEGREES).rowcount
    report.facts_embedded = _embed_missing(
        database, "fact", q.FACT_STATEMENTS_WITHOUT_EMBEDDING, q.SET_FACT_EMBEDDING,
        lambda row: row[0], lambda row: {"ids": row[1]}, embed, log, "fact statements",
    )
    report.entities_embedded = _embed_missing(
        database, "entity", q.ENTITIES_WITHOUT_EMBEDDING, q.SET_ENTITY_EMBEDDING,
        lambda row: entity_text(row[1], row[2]), lambda row: {"id": row[0]}, embed, log, "entities",
    )
    report.kinds_embedded = _embed_missing(
        database, "entity_kind", q.KINDS_WITHOUT_EMBEDDING, q.SET_KIND_EMBEDDING,
        lambda row: kind_text(row[0], row[1]), lambda row: {"name": row[0]}, embed, log, "entity kinds",
    )
    with database.connection() as connection:
        # The new versions of the entity rows written above, moved into the trigram index at once
        # (migration 0116), so near-name probes read no pending list.
        connection.execute(INDEX_PENDING_ENTITY_NAMES)
        report.statistics = named_row(connection.execute(q.GRAPH_STATISTICS), "the graph's statistics")
        report.top_entities = connection.execute(q.TOP_ENTITIES, {"limit": TOP_ENTITY_COUNT}).fetchall()
        report.kinds = connection.execute(q.ENTITIES_PER_KIND).fetchall()
    return report


def _digest_id(prefix: str, *parts: object) -> str:
    return prefix + hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).hexdigest()[:16]


@dataclass
class Redone:
    """What a step in either mode did: its mode, rows summarised and embedded again, rows kept as
    they were, rows deleted, and of those the malformed: stored rows the step would not have made
    (a writer's under its id prefix, a row without its embedding), skipped and so removed."""

    mode: RebuildMode = "full"
    recomputed: int = 0
    kept: int = 0
    removed: int = 0
    malformed: int = 0


def _mode_to_run(connection: Connection, step: str, requested: RebuildMode, settings: str) -> RebuildMode:
    """Incremental only when asked and the stored rows were built with the same settings."""
    built_with = connection.execute(q.BUILT_WITH, {"key": _settings_key(step)}).fetchone()
    same = built_with is not None and built_with[0] == settings
    return "incremental" if requested == "incremental" and same else "full"


def _settings_key(step: str) -> str:
    return f"graph_built_with:{step}"


def _settings_digest(summarizer: Summarizer, embedding_model: str, settings: object) -> str:
    """What a step's rows depend on beside their sources: a row kept under another summarizer or
    embedding model would sit among rows made by the new one."""
    return source_digest([
        summarizer.name, str(summarizer.max_chars), embedding_model, json.dumps(settings, sort_keys=True),
    ])


def _write(
    connection: Connection, step: str, settings: str, lock: str, upsert: str, rows: Sequence[dict],
    delete_except: str, final_keys: Sequence[str],
) -> None:
    """The step's rows summarised anew written (parents first), every row not in `final_keys` deleted,
    and the settings recorded, in the caller's transaction."""
    connection.execute(lock)
    connection.cursor().executemany(upsert, rows)
    connection.execute(delete_except, {"ids": list(final_keys)})
    connection.execute(q.RECORD_BUILT_WITH, {"key": _settings_key(step), "value": settings})


@dataclass
class CommunityReport:
    communities: int = 0
    connected_entities: int = 0
    covered_entities: int = 0
    sizes_per_level: dict[int, list[int]] = field(default_factory=dict)
    preview: list[tuple[int, str, int, str]] = field(default_factory=list)
    redone: Redone = field(default_factory=Redone)


def _partition(
    vertices: Sequence[str], edges: Sequence[tuple[str, str, float]], scopes_of: Callable[[str], Sequence[str]],
    settings: CommunitySettings, log: Log,
) -> list[CommunityNode]:
    """Leiden hierarchies of `vertices`, one per scope set, parents as indexes into the one list."""
    nodes: list[CommunityNode] = []
    partitioned = step_progress(COMMUNITIES_STEP, len(vertices), "entities partitioned by Leiden", log)
    done = 0
    for group in by_scope_set(vertices, scopes_of):
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
    return nodes


def build_communities(
    database: Database, settings: CommunitySettings, summarizer: Summarizer, embed: Embed, log: Log = silent,
    *, embedding_model: str, requested: RebuildMode = "full",
) -> CommunityReport:
    vectors_of = SummaryVectors(summarizer.quotes_sources, lambda texts: embed_showing_progress(
        embed, texts, step_progress(COMMUNITIES_STEP, len(texts), "communities embedded", log)
    ))
    built_with = _settings_digest(summarizer, embedding_model, {**settings.model_dump(), "vectors": vectors_of.method})
    with database.connection() as connection:
        mode = _mode_to_run(connection, COMMUNITIES_STEP, requested, built_with)
        vertices = [row[0] for row in connection.execute(q.CONNECTED_ENTITIES)]
        edges = connection.execute(q.ENTITY_EDGES).fetchall()
        entities = {row[0]: row for row in connection.execute(q.ENTITY_NAMES, {"ids": vertices})}
        stored_rows = connection.execute(q.PREVIOUS_COMMUNITIES).fetchall() if mode == "incremental" else []
        previous_edges = connection.execute(q.PREVIOUS_COMMUNITY_EDGES).fetchall() if mode == "incremental" else []
    previous = _communities_it_made(stored_rows, entities)
    kept, repartition = split_by_touch(
        [(row[0], row[2], row[5]) for row in previous], touched_vertices(previous_edges, edges)
    ) if mode == "incremental" else (set(), set(vertices))
    nodes = _partition(
        [vertex for vertex in vertices if vertex in repartition], edges, lambda vertex: entities[vertex][4], settings, log,
    )
    # Every community after this refresh, parents first: the kept ones as stored, then the new ones.
    rows = [
        {"id": row[0], "level": row[1], "parent_id": row[2], "label": row[3], "summary": row[4],
         "members": list(row[5]), "scopes": list(row[6]), "source_digest": row[7]}
        for row in previous if row[0] in kept
    ]
    ids = [_digest_id("c", node.level, *sorted(node.members)) for node in nodes]
    rows += [
        {"id": ids[index], "level": node.level, "parent_id": None if node.parent is None else ids[node.parent],
         "members": sorted(node.members)}
        for index, node in enumerate(nodes)
    ]
    stored = {row[0]: row for row in previous}
    redo = []
    sources = []  # per row in redo: the vectors of its distinct fact statements
    summarised = step_progress(COMMUNITIES_STEP, len(rows), "communities compared with their sources", log)
    with database.connection() as connection:
        facts_per_row = _facts_per_row(connection, q.FACTS_AMONG, [row["members"] for row in rows])
        for done, (row, facts) in enumerate(zip(rows, facts_per_row, strict=True), start=1):
            members = sorted(row["members"], key=lambda m: (-entities[m][3], entities[m][1]))
            label = ", ".join(entities[m][1] for m in members[:LABEL_MEMBERS])
            scopes = union_scopes([entities[m][4] for m in row["members"]] + [s for _, s, _ in facts])
            digest = source_digest([label, *(statement for statement, _, _ in facts), *scopes])
            previously = stored.get(row["id"])
            if previously is not None and previously[7] == digest and previously[2] == row["parent_id"]:
                row.update(label=previously[3], summary=previously[4], scopes=list(previously[6]), source_digest=digest)
            else:
                summary = summarizer.summarize([statement for statement, _, _ in facts], topic=label) or label
                row.update(label=label, summary=summary, scopes=scopes, source_digest=digest)
                redo.append(row)
                # A statement stating several facts is one sentence of the summary's sources.
                distinct = {statement: vector for statement, _, vector in facts if vector is not None}
                sources.append(np.asarray([vector.to_numpy() for vector in distinct.values()]))
            summarised(done)
    vectors = vectors_of([f"{row['label']}: {row['summary']}" for row in redo], sources)
    with database.connection() as connection, connection.transaction():
        _write(
            connection, COMMUNITIES_STEP, built_with, q.LOCK_COMMUNITIES, q.UPSERT_COMMUNITY,
            [{**row, "embedding": vector} for row, vector in zip(redo, vectors)],
            q.DELETE_COMMUNITIES_EXCEPT, [row["id"] for row in rows],
        )
        connection.execute(q.REPLACE_COMMUNITY_EDGES)
        connection.cursor().executemany(q.INSERT_COMMUNITY_EDGE, [
            {"source": a, "target": b, "weight": weight,
             "scopes": union_scopes([entities[a][4] if a in entities else [], entities[b][4] if b in entities else []])}
            for a, b, weight in edges
        ])
    report = CommunityReport(communities=len(rows), connected_entities=len(vertices))
    report.covered_entities = len({m for row in rows for m in row["members"]})
    for row in rows:
        report.sizes_per_level.setdefault(row["level"], []).append(len(row["members"]))
    report.preview = [(row["level"], row["label"], len(row["members"]), row["summary"]) for row in rows[:5]]
    report.redone = Redone(
        mode, len(redo), len(rows) - len(redo), len({row[0] for row in stored_rows} - {row["id"] for row in rows}),
        len(stored_rows) - len(previous),
    )
    return report


def _communities_it_made(stored: Sequence[tuple], entities: dict[str, tuple]) -> list[tuple]:
    """The stored communities this step made: each under the id its level and members give it, of
    current entities, below a parent that is one of them (parents come first). Any other row (a
    writer's, or one left inconsistent) would be kept as it is or fail the refresh."""
    made: list[tuple] = []
    ids: set[str] = set()
    for row in stored:
        community_id, level, parent_id, members = row[0], row[1], row[2], row[5]
        if (
            community_id == _digest_id("c", level, *sorted(members))
            and members and all(member in entities for member in members)
            and (parent_id is None or parent_id in ids)
        ):
            made.append(row)
            ids.add(community_id)
    return made


def _facts_per_row(connection: Connection, query: str, entity_ids: Sequence[Sequence[str]]) -> Iterator[list[tuple]]:
    """The facts `query` finds for each row's entities, in the rows' order, ROWS_PER_FACT_QUERY rows a
    query: the query pairs row i's entity ids with i (`ordinals`, `ids`) and returns i first."""
    for start in range(0, len(entity_ids), ROWS_PER_FACT_QUERY):
        batch = entity_ids[start : start + ROWS_PER_FACT_QUERY]
        facts: list[list[tuple]] = [[] for _ in batch]
        ordinals = [ordinal for ordinal, ids in enumerate(batch) for _ in ids]
        ids = [entity_id for row_ids in batch for entity_id in row_ids]
        # Binary: parsing the vectors' text took half of the communities step.
        for ordinal, *fact in connection.execute(query, {"ordinals": ordinals, "ids": ids}, binary=True):
            facts[ordinal].append(tuple(fact))
        yield from facts


@dataclass
class ProfileReport:
    profiles: int = 0
    preview: list[tuple[str, int, str]] = field(default_factory=list)
    redone: Redone = field(default_factory=Redone)


def build_profiles(
    database: Database, min_degree: int, summarizer: Summarizer, embed: Embed, log: Log = silent,
    *, embedding_model: str, requested: RebuildMode = "full",
) -> ProfileReport:
    built_with = _settings_digest(summarizer, embedding_model, {"min_degree": min_degree})
    rows = []
    redo = []
    with database.connection() as connection:
        mode = _mode_to_run(connection, PROFILES_STEP, requested, built_with)
        stored = dict(connection.execute(q.PREVIOUS_PROFILE_DIGESTS).fetchall()) if mode == "incremental" else {}
        candidates = connection.execute(q.PROFILE_CANDIDATES, {"min_degree": min_degree}).fetchall()
        advance = step_progress(PROFILES_STEP, len(candidates), "entities compared with their facts", log)
        facts_per_row = _facts_per_row(connection, q.ENTITY_FACTS, [[entity_id] for entity_id, *_ in candidates])
        for done, ((entity_id, name, kind, scopes), facts) in enumerate(zip(candidates, facts_per_row, strict=True), start=1):
            if facts:
                row_scopes = union_scopes([scopes] + [s for _, s in facts])
                digest = source_digest([name, kind, *(statement for statement, _ in facts), *row_scopes])
                row = {"entity_id": entity_id, "fact_count": len(facts), "scopes": row_scopes, "source_digest": digest}
                rows.append(row)
                if stored.get(entity_id) != digest:
                    summary = summarizer.summarize([statement for statement, _ in facts], topic=name)
                    # The name leads so the profile is found by a question that names the entity.
                    row["summary"] = f"{name} ({kind}): {summary}"
                    redo.append(row)
            advance(done)
    # The text is embedded even when the summary quotes the facts: the mean of the facts' vectors
    # (with or without the entity's own) put a profile holding the answer in the lane's top 2 for
    # 12 of 100 MuSiQue train questions against the text's 20, and lost on HotpotQA in other blends.
    vectors = embed_showing_progress(
        embed, [row["summary"] for row in redo], step_progress(PROFILES_STEP, len(redo), "profiles embedded", log)
    )
    with database.connection() as connection, connection.transaction():
        _write(
            connection, PROFILES_STEP, built_with, q.LOCK_PROFILES, q.UPSERT_PROFILE,
            [{**row, "embedding": vector} for row, vector in zip(redo, vectors)],
            q.DELETE_PROFILES_EXCEPT, [row["entity_id"] for row in rows],
        )
    redone = Redone(mode, len(redo), len(rows) - len(redo), len(set(stored) - {row["entity_id"] for row in rows}))
    return ProfileReport(len(rows), [(row["entity_id"], row["fact_count"], row["summary"]) for row in redo[:5]], redone)


@dataclass
class RaptorReport:
    leaves: int = 0
    nodes_per_level: dict[int, int] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    redone: Redone = field(default_factory=Redone)


def build_raptor(
    database: Database, settings: RaptorSettings, summarizer: Summarizer, embed: Embed, log: Log = silent,
    *, embedding_model: str, requested: RebuildMode = "full",
) -> RaptorReport:
    vectors_of = SummaryVectors(summarizer.quotes_sources, embed)
    built_with = _settings_digest(summarizer, embedding_model, {**settings.model_dump(), "vectors": vectors_of.method})
    with database.connection() as connection:
        mode = _mode_to_run(connection, RAPTOR_STEP, requested, built_with)
        leaves = connection.execute(q.RAPTOR_LEAVES).fetchall()
        stored_nodes = connection.execute(q.PREVIOUS_RAPTOR_NODES).fetchall() if mode == "incremental" else []
    previous = _raptor_nodes_it_made(stored_nodes)
    trees: dict[tuple[str, ...], list[RaptorNode]] = {}
    for node in previous:
        trees.setdefault(node.scopes, []).append(node)
    nodes: list[RaptorNode] = []
    for group in by_scope_set(leaves, lambda leaf: leaf[3]):
        ids, texts, scopes = [row[0] for row in group], [row[1] for row in group], [row[3] for row in group]
        vectors = np.asarray([row[2].to_numpy() for row in group], dtype=np.float32).reshape(len(group), -1)
        updated = update_tree(
            trees.get(tuple(sorted(group[0][3])), []), ids, texts, vectors, scopes,
            summarize=summarizer.summarize, vectors_of=vectors_of,
        )
        nodes += updated if updated is not None else build_tree(
            ids, texts, vectors, scopes,
            summarize=summarizer.summarize,
            vectors_of=vectors_of,
            max_levels=settings.max_levels,
            root_count=settings.root_count,
            max_clusters=settings.max_clusters,
            reduced_dimensions=settings.reduced_dimensions,
            covariance=settings.covariance,
            seed=settings.seed,
            step=RAPTOR_STEP,
            log=log,
        )
    unchanged = {node.id: node.source_digest for node in previous}
    redo = [node for node in nodes if unchanged.get(node.id) != node.source_digest]
    with database.connection() as connection, connection.transaction():
        _write(
            connection, RAPTOR_STEP, built_with, q.LOCK_RAPTOR, q.UPSERT_RAPTOR_NODE,
            [
                {"id": node.id, "level": node.level, "summary": node.summary, "children": list(node.children),
                 "embedding": node.embedding, "scopes": list(node.scopes), "source_digest": node.source_digest}
                for node in redo
            ],
            q.DELETE_RAPTOR_NODES_EXCEPT, [node.id for node in nodes],
        )
    report = RaptorReport(leaves=len(leaves))
    for node in nodes:
        report.nodes_per_level[node.level] = report.nodes_per_level.get(node.level, 0) + 1
    top = max(report.nodes_per_level, default=None)
    report.roots = [node.summary for node in nodes if node.level == top]
    report.redone = Redone(
        mode, len(redo), len(nodes) - len(redo), len({row[0] for row in stored_nodes} - {node.id for node in nodes}),
        len(stored_nodes) - len(previous),
    )
    return report


def _raptor_nodes_it_made(stored: Sequence[tuple]) -> list[RaptorNode]:
    """The stored nodes this step made: each under the id its level and children give it, with an
    embedding, above nodes that are themselves such (levels come in order). Any other row (a
    writer's, or one left without its vector) would fail the refresh or join a tree it is not of."""
    made: list[RaptorNode] = []
    ids: set[str] = set()
    for node_id_stored, level, children, summary, embedding, scopes, digest in stored:
        children = tuple(children or ())
        if (
            embedding is not None and level >= 1 and children
            and node_id_stored == node_id(level, children)
            and (level == 1 or all(child in ids for child in children))
        ):
            made.append(RaptorNode(node_id_stored, level, children, summary, embedding.to_numpy(), tuple(scopes), digest))
            ids.add(node_id_stored)
    return made
