"""Hierarchical Leiden communities over the live entity graph (igraph + leidenalg, seeded).

Level 0 partitions the whole graph. A community larger than `max_size` is partitioned again on its
own subgraph, and its parts become level 1 communities under it, and so on down to `max_levels`.
A single entity is not a community: the profile lane covers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import igraph
import leidenalg

MIN_MEMBERS = 2


@dataclass(frozen=True)
class CommunityNode:
    level: int
    members: tuple[str, ...]
    parent: int | None  # index of the parent node in the returned list


def _partition(graph: igraph.Graph, resolution: float, seed: int) -> list[list[int]]:
    partition = leidenalg.find_partition(
        graph,
        leidenalg.RBConfigurationVertexPartition,
        weights="weight",
        resolution_parameter=resolution,
        seed=seed,
    )
    # Largest first, ties by lowest vertex: the same graph always lists communities in one order.
    return sorted((sorted(part) for part in partition), key=lambda part: (-len(part), part[0]))


def leiden_hierarchy(
    vertices: Sequence[str],
    edges: Sequence[tuple[str, str, float]],
    *,
    max_size: int,
    resolution: float,
    max_levels: int,
    seed: int,
) -> list[CommunityNode]:
    """Communities of `vertices` (ids) connected by weighted `edges`, parents before children."""
    names = sorted(set(vertices))
    index = {name: position for position, name in enumerate(names)}
    graph = igraph.Graph(n=len(names))
    graph.vs["name"] = names
    weighted = [(index[a], index[b], w) for a, b, w in edges if a in index and b in index and a != b]
    graph.add_edges([(a, b) for a, b, _ in weighted])
    graph.es["weight"] = [w for _, _, w in weighted]
    nodes: list[CommunityNode] = []
    # (subgraph vertex ids in the full graph, level, parent index)
    pending: list[tuple[list[int], int, int | None]] = [(list(range(len(names))), 0, None)]
    while pending:
        vertex_ids, level, parent = pending.pop(0)
        subgraph = graph.induced_subgraph(vertex_ids)
        parts = _partition(subgraph, resolution, seed)
        if parent is not None and len(parts) < 2:
            continue
        for part in parts:
            members = [vertex_ids[i] for i in part]
            if len(members) < MIN_MEMBERS:
                continue
            nodes.append(CommunityNode(level, tuple(names[i] for i in members), parent))
            if len(members) > max_size and level + 1 < max_levels:
                pending.append((members, level + 1, len(nodes) - 1))
    return nodes


def touched_vertices(
    previous_edges: Iterable[tuple[str, str, float]], edges: Iterable[tuple[str, str, float]]
) -> set[str]:
    """Entities at either end of a pair that was added, removed or reweighted since `previous_edges`."""
    before = {(a, b): weight for a, b, weight in previous_edges}
    after = {(a, b): weight for a, b, weight in edges}
    changed = [pair for pair in before.keys() | after.keys() if before.get(pair) != after.get(pair)]
    return {vertex for pair in changed for vertex in pair}


def split_by_touch(
    communities: Sequence[tuple[str, str | None, Sequence[str]]], touched: set[str]
) -> tuple[set[str], set[str]]:
    """Stored communities, as (id, parent id, members), split by the `touched` vertices into the ids
    kept as they are (a level 0 community with no touched member, and its whole subtree: Leiden saw
    the same subgraph there) and the vertices to partition again (the touched ones and every member
    of a level 0 community they reach, so a new pair can merge two communities or split one)."""
    repartition = set(touched)
    kept: set[str] = set()
    for community_id, parent, members in communities:
        if parent is None:
            if touched.isdisjoint(members):
                kept.add(community_id)
            else:
                repartition.update(members)
    # Parents come before their children in `communities`.
    for community_id, parent, _ in communities:
        if parent in kept:
            kept.add(community_id)
    return kept, repartition
