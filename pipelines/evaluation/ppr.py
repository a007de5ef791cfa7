"""The exact graph reference: HippoRAG-style personalized PageRank, run in Python with igraph over
the very tables the find statement reads. It is the peer users compare a graph ranking against, and
the measure of what a bounded ranking inside the statement gives up.

Nodes are chunks and entities; edges are undirected and unweighted:
- a chunk names an entity (`entity_mention`);
- a page is about its title: every chunk of a document links to the entity named as its title;
- a page's title is its main entity (a node `page:<document id>`): a chunk that names it
  (`title_link`) and every chunk of the page link to it;
- a live fact links its subject and its object entity.
Entities named in `bridge_fanout` chunks or more are hubs ("United States") and keep no edge, as
in the bridge hop.

The restart vector follows HippoRAG 2 without its LLM: the entities the question names, and the
entities of the SEED_CHUNKS chunks nearest the question, each seed chunk's similarity split among
its entities; every entity's share divided by the number of chunks naming it (HippoRAG's node
specificity), the entity part normalized to one; then the ANN window of chunks, their similarity
min-max scaled, weighted by PASSAGE_WEIGHT. Chunks rank by their PageRank, highest first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import igraph
import numpy as np
import psycopg

from pipelines.lanes_config import ANN_WINDOW
from pipelines.read.question import question_terms

# HippoRAG 2's damping: half the mass restarts at every step, so the walk stays near its seeds.
DAMPING = 0.5
# Chunk nodes' share of the restart beside the entities'. HippoRAG 2 uses 0.05 with a 7B embedder;
# on MuSiQue's train questions 0.05 / 0.2 / 1.0 gave Recall@5 0.536 / 0.588 / 0.572 with MiniLM.
PASSAGE_WEIGHT = 0.2
SEED_CHUNKS = 5

MENTION_EDGES = "SELECT DISTINCT chunk_id, entity_id FROM entity_mention"
TITLE_EDGES = """
SELECT chunk.id, entity.id
FROM document
JOIN chunk ON chunk.document_id = document.id
JOIN entity ON lanegraph_fold_accents(entity.name_lower) = document.title_lower
WHERE document.retracted_at IS NULL
"""
PAGE_EDGES = """
SELECT title_link.chunk_id, 'page:' || title_link.linked_document_id FROM title_link
UNION
SELECT chunk.id, 'page:' || chunk.document_id
FROM chunk
WHERE chunk.document_id IN (SELECT title_link.linked_document_id FROM title_link)
"""
FACT_EDGES = "SELECT subject_id, object_id FROM live_fact WHERE object_id IS NOT NULL"
NAMED_ENTITIES = """
SELECT entity.id FROM entity WHERE entity.name_lower = ANY(%(terms)s)
UNION
SELECT entity_alias.entity_id FROM entity_alias WHERE entity_alias.alias = ANY(%(terms)s)
UNION
SELECT 'page:' || document.id
FROM document
WHERE document.title_lower = ANY(%(terms)s) OR document.title_name_lower = ANY(%(terms)s)
"""
NEAREST_CHUNKS = f"""
SELECT chunk.id, 1 - (chunk.embedding <=> %(vector)s) AS similarity
FROM chunk
ORDER BY chunk.embedding <=> %(vector)s, chunk.id
LIMIT {ANN_WINDOW}
"""


@dataclass(frozen=True)
class EntityGraph:
    """The chunk-entity graph: chunk nodes first, then entity nodes."""

    graph: igraph.Graph
    chunk_ids: tuple[str, ...]
    node_of: dict[str, int]
    entities_of_chunk: dict[str, tuple[str, ...]]
    chunks_naming: dict[str, int]

    def rank(self, reset: dict[str, float]) -> list[str]:
        """Chunk ids by personalized PageRank from `reset` (node id → weight), best first; chunks
        the walk never reaches are left out."""
        vector = np.zeros(self.graph.vcount())
        for node, weight in reset.items():
            vector[self.node_of[node]] += weight
        scores = self.graph.personalized_pagerank(
            directed=False, damping=DAMPING, reset=vector.tolist(), implementation="prpack"
        )
        chunk_scores = np.asarray(scores[: len(self.chunk_ids)])
        order = np.lexsort((np.arange(len(self.chunk_ids)), -chunk_scores))
        return [self.chunk_ids[index] for index in order if chunk_scores[index] > 0]


def entity_graph(
    chunk_ids: Sequence[str],
    mentions: Sequence[tuple[str, str]],
    facts: Sequence[tuple[str, str]],
    fanout: int,
) -> EntityGraph:
    """The graph over `chunk_ids`, from (chunk, entity) links and (entity, entity) facts, without
    the hubs named in `fanout` chunks or more."""
    naming: dict[str, set[str]] = defaultdict(set)
    for chunk_id, entity_id in mentions:
        naming[entity_id].add(chunk_id)
    kept = {entity_id for entity_id, chunks in naming.items() if len(chunks) < fanout}
    nodes = list(chunk_ids) + sorted(kept)
    node_of = {node: index for index, node in enumerate(nodes)}
    chunk_links = sorted({(c, e) for c, e in mentions if e in kept and c in node_of})
    fact_links = sorted({tuple(sorted(pair)) for pair in facts if pair[0] in kept and pair[1] in kept and pair[0] != pair[1]})
    graph = igraph.Graph(n=len(nodes), edges=[(node_of[a], node_of[b]) for a, b in (*chunk_links, *fact_links)])
    entities_of_chunk: dict[str, list[str]] = defaultdict(list)
    for chunk_id, entity_id in chunk_links:
        entities_of_chunk[chunk_id].append(entity_id)
    return EntityGraph(
        graph,
        tuple(chunk_ids),
        node_of,
        {chunk_id: tuple(entities) for chunk_id, entities in entities_of_chunk.items()},
        {entity_id: len(naming[entity_id]) for entity_id in kept},
    )


def load_entity_graph(connection: psycopg.Connection, fanout: int) -> EntityGraph:
    chunk_ids = [row[0] for row in connection.execute("SELECT id FROM chunk ORDER BY id")]
    mentions = [
        *connection.execute(MENTION_EDGES).fetchall(),
        *connection.execute(TITLE_EDGES).fetchall(),
        *connection.execute(PAGE_EDGES).fetchall(),
    ]
    return entity_graph(chunk_ids, mentions, connection.execute(FACT_EDGES).fetchall(), fanout)


def restart_weights(
    graph: EntityGraph, named: Sequence[str], nearest: Sequence[tuple[str, float]]
) -> dict[str, float]:
    """HippoRAG 2's seeds without an LLM: `named` entities and the entities of the best
    SEED_CHUNKS of `nearest` (chunk id, similarity; best first), then the chunks themselves."""
    entity_weight: dict[str, float] = defaultdict(float)
    for entity_id in named:
        if entity_id in graph.chunks_naming:
            entity_weight[entity_id] += 1.0 / graph.chunks_naming[entity_id]
    for chunk_id, similarity in nearest[:SEED_CHUNKS]:
        entities = graph.entities_of_chunk.get(chunk_id, ())
        for entity_id in entities:
            entity_weight[entity_id] += similarity / len(entities) / graph.chunks_naming[entity_id]
    total = sum(entity_weight.values())
    reset = {entity_id: weight / total for entity_id, weight in entity_weight.items()} if total > 0 else {}
    if nearest:
        similarities = [similarity for _, similarity in nearest]
        low, spread = min(similarities), max(similarities) - min(similarities)
        for chunk_id, similarity in nearest:
            if chunk_id in graph.node_of:
                scaled = (similarity - low) / spread if spread > 0 else 1.0
                reset[chunk_id] = reset.get(chunk_id, 0.0) + PASSAGE_WEIGHT * scaled
    return reset


def ppr_ranking(connection: psycopg.Connection, graph: EntityGraph, question: str, vector: np.ndarray) -> list[str]:
    """The question's chunks ranked by personalized PageRank over `graph`."""
    named = [row[0] for row in connection.execute(NAMED_ENTITIES, {"terms": question_terms(question)})]
    nearest = [(chunk_id, float(similarity)) for chunk_id, similarity in connection.execute(NEAREST_CHUNKS, {"vector": vector})]
    reset = restart_weights(graph, named, nearest)
    return graph.rank(reset) if reset else []
