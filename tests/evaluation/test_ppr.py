"""The exact PageRank reference: its graph, its restart weights, and a second hop only the walk reaches."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.evaluation.ppr import DAMPING, PASSAGE_WEIGHT, SEED_CHUNKS, entity_graph, restart_weights

CHUNKS = ("c-bridge", "c-distractor", "c-first", "c-second")
# The question names Ada; the first chunk names Ada and the Orrery; the second hop is the page about
# the Orrery (no word of the question in it); the distractor names an unrelated entity.
MENTIONS = [
    ("c-first", "e-ada"),
    ("c-first", "e-orrery"),
    ("c-second", "e-orrery"),
    ("c-second", "e-brass"),
    ("c-bridge", "e-brass"),
    ("c-distractor", "e-kiln"),
]


def test_the_walk_reaches_the_page_about_what_the_first_chunk_names() -> None:
    graph = entity_graph(CHUNKS, MENTIONS, [], fanout=50)
    reset = restart_weights(graph, ["e-ada"], [("c-first", 0.9)])

    ranking = graph.rank(reset)

    # Two entity hops on, the bridge page still gets mass, less than the second hop; the walk never
    # reaches the distractor, which shares no entity with them.
    assert ranking == ["c-first", "c-second", "c-bridge"]


def test_rank_is_personalized_pagerank_by_power_iteration() -> None:
    graph = entity_graph(CHUNKS, MENTIONS, [("e-kiln", "e-brass")], fanout=50)
    reset = restart_weights(graph, ["e-ada"], [("c-first", 0.9), ("c-distractor", 0.5)])
    adjacency = np.array(graph.graph.get_adjacency().data, dtype=float)
    transition = adjacency / adjacency.sum(axis=0, keepdims=True)
    restart = np.zeros(len(adjacency))
    for node, weight in reset.items():
        restart[graph.node_of[node]] = weight
    restart /= restart.sum()
    scores = restart.copy()
    for _ in range(200):
        scores = (1 - DAMPING) * restart + DAMPING * transition @ scores

    chunk_scores = scores[: len(CHUNKS)]
    expected = [CHUNKS[i] for i in np.lexsort((np.arange(len(CHUNKS)), -chunk_scores))]
    assert graph.rank(reset) == expected


def test_hub_entities_carry_no_edge() -> None:
    mentions = [*MENTIONS, ("c-second", "e-ada"), ("c-bridge", "e-ada"), ("c-distractor", "e-ada")]
    graph = entity_graph(CHUNKS, mentions, [("e-ada", "e-kiln")], fanout=4)

    assert "e-ada" not in graph.node_of
    assert "e-ada" not in graph.entities_of_chunk["c-first"]
    assert graph.graph.ecount() == len(MENTIONS) - 1


def test_restart_weights_split_each_seed_and_divide_by_specificity() -> None:
    graph = entity_graph(CHUNKS, MENTIONS, [], fanout=50)
    nearest = [("c-first", 0.9), ("c-second", 0.7), ("c-distractor", 0.5)]

    reset = restart_weights(graph, ["e-ada", "e-unknown"], nearest)

    # Ada: 1 (named) + 0.9 / 2 (half of the first chunk); the Orrery, in two chunks: (0.45 + 0.35) / 2.
    raw = {"e-ada": 1.45, "e-orrery": 0.4, "e-brass": 0.35 / 2, "e-kiln": 0.5}
    total = sum(raw.values())
    for entity_id, weight in raw.items():
        assert reset[entity_id] == pytest.approx(weight / total)
    assert reset["c-first"] == pytest.approx(PASSAGE_WEIGHT)
    assert reset["c-second"] == pytest.approx(PASSAGE_WEIGHT * 0.5)
    assert reset["c-distractor"] == 0.0
    assert len(nearest) <= SEED_CHUNKS
