"""The RAPTOR tree: cluster, summarise, give each summary a vector, repeat, from chunks up to a few roots.

Each level reduces its nodes' embeddings with PCA (UMAP, which the RAPTOR paper uses, is not a
dependency), fits Gaussian mixtures over a range of component counts and keeps the count with the
lowest BIC (seeded, so the same corpus builds the
same tree). Every level at least halves the node count, and the last allowed level is capped at
`root_count` clusters, so the top level never has more than `root_count` roots.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.decomposition import PCA
from sklearn.mixture import GaussianMixture

from pipelines.write.progress import Log, step_progress
from pipelines.write.summaries.summaries import source_digest
from pipelines.write.summaries.summary_vectors import SummaryVectors, unit

# Candidate component counts beyond this many are sampled on a geometric grid, not tried one by one.
EXHAUSTIVE_CANDIDATES = 12


@dataclass(frozen=True)
class RaptorNode:
    id: str
    level: int
    children: tuple[str, ...]
    summary: str
    embedding: np.ndarray
    scopes: tuple[str, ...]
    source_digest: str  # of the texts summarised: the children's texts, in order


def candidate_counts(upper: int) -> list[int]:
    if upper <= EXHAUSTIVE_CANDIDATES:
        return list(range(1, upper + 1))
    grid = np.geomspace(1, upper, EXHAUSTIVE_CANDIDATES)
    return sorted({int(round(value)) for value in grid} | {upper})


def cluster_vectors(
    vectors: np.ndarray, *, max_clusters: int, reduced_dimensions: int, covariance: str, seed: int,
    step: str, log: Log,
) -> list[list[int]]:
    """Groups of row indices; the number of groups is BIC-chosen and at most `max_clusters`. Fitting
    the candidate mixtures is the slow part over many vectors, so each fit counts as progress of `step`."""
    count = len(vectors)
    upper = min(max_clusters, count)
    if upper <= 1:
        return [list(range(count))]
    dimensions = min(reduced_dimensions, count - 1, vectors.shape[1])
    reduced = PCA(n_components=dimensions, random_state=seed).fit_transform(vectors)
    best: tuple[float, np.ndarray] | None = None
    candidates = candidate_counts(upper)
    fitted = step_progress(step, len(candidates), f"mixtures fitted over {count:,} vectors", log)
    for done, components in enumerate(candidates, start=1):
        mixture = GaussianMixture(n_components=components, covariance_type=covariance, random_state=seed, reg_covar=1e-4)
        mixture.fit(reduced)
        bic = mixture.bic(reduced)
        if best is None or bic < best[0]:
            best = (bic, mixture.predict(reduced))
        fitted(done)
    labels = best[1]
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels):
        groups.setdefault(int(label), []).append(row)
    return sorted(groups.values(), key=lambda group: group[0])


def node_id(level: int, children: Sequence[str]) -> str:
    digest = hashlib.sha256("\x1f".join(sorted(children)).encode()).hexdigest()[:16]
    return f"r{level}-{digest}"


def build_tree(
    leaf_ids: Sequence[str],
    leaf_texts: Sequence[str],
    leaf_vectors: np.ndarray,
    leaf_scopes: Sequence[Sequence[str]],
    *,
    summarize: Callable[[Sequence[str]], str],
    vectors_of: SummaryVectors,
    max_levels: int,
    root_count: int,
    max_clusters: int,
    reduced_dimensions: int,
    covariance: str,
    seed: int,
    step: str,
    log: Log,
) -> list[RaptorNode]:
    """Every node of the tree, level 1 (clusters of leaves) first; progress lines name `step` and the level."""
    ids, texts, vectors, scopes = list(leaf_ids), list(leaf_texts), np.asarray(leaf_vectors), [tuple(s) for s in leaf_scopes]
    nodes: list[RaptorNode] = []
    for level in range(1, max_levels + 1):
        if not ids or (level > 1 and len(ids) <= root_count):
            break
        limit = root_count if level == max_levels else min(max_clusters, math.ceil(len(ids) / 2))
        level_step = f"{step} level {level}"
        groups = cluster_vectors(
            vectors, max_clusters=max(1, limit), reduced_dimensions=reduced_dimensions, covariance=covariance, seed=seed,
            step=level_step, log=log,
        )
        summarised = step_progress(level_step, len(groups), f"clusters of {len(ids):,} nodes summarised", log)
        summaries = []
        for group in groups:
            summaries.append(summarize([texts[i] for i in group]))
            summarised(len(summaries))
        embeddings = vectors_of(summaries, [vectors[group] for group in groups])
        level_nodes = [
            RaptorNode(
                id=node_id(level, [ids[i] for i in group]),
                level=level,
                children=tuple(ids[i] for i in group),
                summary=summary,
                embedding=embedding,
                scopes=tuple(sorted({scope for i in group for scope in scopes[i]})),
                source_digest=source_digest([texts[i] for i in group]),
            )
            for group, summary, embedding in zip(groups, summaries, embeddings)
        ]
        nodes.extend(level_nodes)
        ids = [node.id for node in level_nodes]
        texts = [node.summary for node in level_nodes]
        vectors = np.asarray(embeddings)
        scopes = [node.scopes for node in level_nodes]
    return nodes


def update_tree(
    previous: Sequence[RaptorNode],
    leaf_ids: Sequence[str],
    leaf_texts: Sequence[str],
    leaf_vectors: np.ndarray,
    leaf_scopes: Sequence[Sequence[str]],
    *,
    summarize: Callable[[Sequence[str]], str],
    vectors_of: SummaryVectors,
) -> list[RaptorNode] | None:
    """The tree `previous` over the current leaves, without clustering again; None when none of its
    level 1 nodes holds a current leaf (there is nothing to add to: build a tree instead).

    A leaf the tree does not hold joins the level 1 node whose leaves' centroid (as the tree holds
    them) is nearest by cosine; a leaf gone leaves its node. A node whose children or their texts
    changed is summarised and given its vector again, under a new id when its children changed, and
    so is every node above it; a node left without children goes. Every other node is returned as it was.
    The clusters drift from what a new clustering would find; the periodic full rebuild resets them.
    """
    text = dict(zip(leaf_ids, leaf_texts))
    scopes = {leaf: tuple(leaf_scope) for leaf, leaf_scope in zip(leaf_ids, leaf_scopes)}
    vector = dict(zip(leaf_ids, np.asarray(leaf_vectors)))
    first_level = [node for node in previous if node.level == 1]
    held = {node.id: [child for child in node.children if child in text] for node in first_level}
    holders = [node.id for node in first_level if held[node.id]]
    if not holders:
        return None
    centroids = unit(np.asarray([np.mean([vector[leaf] for leaf in held[holder]], axis=0) for holder in holders]))
    placed = {leaf for leaves in held.values() for leaf in leaves}
    for leaf in leaf_ids:
        if leaf not in placed:
            held[holders[int(np.argmax(centroids @ unit(vector[leaf])))]].append(leaf)
    now: dict[str, str | None] = {}  # a previous node's id -> its id in the new tree (None: gone)
    nodes: list[RaptorNode] = []
    for level in sorted({node.level for node in previous}):
        redo: list[tuple[RaptorNode, list[str], list[str]]] = []
        for node in (node for node in previous if node.level == level):
            # Children keep the order the tree holds them in (the database's, not Python's, string
            # order), new leaves after them: an untouched node compares equal.
            children = held[node.id] if level == 1 else [
                child for child in (now.get(old) for old in node.children) if child is not None
            ]
            texts = [text[child] for child in children]
            if not children:
                now[node.id] = None
            elif tuple(children) == node.children and source_digest(texts) == node.source_digest:
                now[node.id] = node.id
                nodes.append(node)
                text[node.id], scopes[node.id], vector[node.id] = node.summary, node.scopes, node.embedding
            else:
                redo.append((node, children, texts))
        summaries = [summarize(texts) for _, _, texts in redo]
        embeddings = vectors_of(
            summaries, [np.asarray([vector[child] for child in children]) for _, children, _ in redo]
        ) if redo else []
        for (node, children, texts), summary, embedding in zip(redo, summaries, embeddings):
            rebuilt = RaptorNode(
                id=node_id(level, children),
                level=level,
                children=tuple(children),
                summary=summary,
                embedding=embedding,
                scopes=tuple(sorted({scope for child in children for scope in scopes[child]})),
                source_digest=source_digest(texts),
            )
            now[node.id] = rebuilt.id
            nodes.append(rebuilt)
            text[rebuilt.id], scopes[rebuilt.id], vector[rebuilt.id] = rebuilt.summary, rebuilt.scopes, rebuilt.embedding
    return nodes
