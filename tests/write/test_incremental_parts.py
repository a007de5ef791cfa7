"""The pure parts of the incremental refresh (which communities a change of entity pairs reaches, a
RAPTOR tree updated with new and removed leaves) and the weekly schedule's full rebuild."""

from __future__ import annotations

import dagster as dg
import numpy as np

from pipelines.definitions import defs
from pipelines.defs.write.graph_schedule import weekly_graph_rebuild
from pipelines.write.graph.communities import split_by_touch, touched_vertices
from pipelines.write.summaries.raptor import RaptorNode, node_id, update_tree
from pipelines.write.summaries.summaries import source_digest
from pipelines.write.summaries.summary_vectors import SummaryVectors, unit


def test_touched_vertices_are_the_ends_of_added_removed_and_reweighted_pairs() -> None:
    before = [("a", "b", 1.0), ("b", "c", 2.0), ("d", "e", 1.0)]
    after = [("a", "b", 1.0), ("b", "c", 3.0), ("e", "f", 1.0)]
    assert touched_vertices(before, after) == {"b", "c", "d", "e", "f"}
    assert touched_vertices(before, before) == set()


def test_a_touched_member_sends_its_whole_level_0_community_to_be_partitioned_again() -> None:
    communities = [
        ("c1", None, ["a", "b", "c"]),
        ("c2", None, ["d", "e"]),
        ("c1.1", "c1", ["a", "b"]),
        ("c2.1", "c2", ["d", "e"]),
    ]
    kept, repartition = split_by_touch(communities, {"b", "x"})
    assert kept == {"c2", "c2.1"}
    assert repartition == {"a", "b", "c", "x"}


def vector(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def join(texts: list[str]) -> str:
    return " | ".join(texts)


def embed(texts: list[str]) -> np.ndarray:
    return np.asarray([vector(len(text), 1.0) for text in texts])


EMBEDDED_TEXT = SummaryVectors(from_sources=False, embed=embed)


def tree() -> list[RaptorNode]:
    leaves = {"k1": "east one", "k2": "east two", "k3": "west one"}
    east = RaptorNode(node_id(1, ["k1", "k2"]), 1, ("k1", "k2"), "east", vector(1, 0), (),
                      source_digest([leaves["k1"], leaves["k2"]]))
    west = RaptorNode(node_id(1, ["k3"]), 1, ("k3",), "west", vector(0, 1), (), source_digest([leaves["k3"]]))
    root = RaptorNode(node_id(2, [east.id, west.id]), 2, (east.id, west.id), "all", vector(1, 1), (),
                      source_digest(["east", "west"]))
    return [east, west, root]


def test_a_new_leaf_joins_the_nearest_cluster_and_only_the_nodes_above_it_change() -> None:
    east, west, root = tree()
    nodes = update_tree(
        [east, west, root], ["k1", "k2", "k3", "k4"], ["east one", "east two", "west one", "west two"],
        np.asarray([vector(1, 0), vector(0.9, 0.1), vector(0, 1), vector(0.1, 0.9)]), [(), (), (), ()],
        summarize=join, vectors_of=EMBEDDED_TEXT,
    )
    assert nodes is not None
    by_level = {node.level: [n for n in nodes if n.level == node.level] for node in nodes}
    assert east in by_level[1]
    [new_west] = [node for node in by_level[1] if node is not east]
    assert new_west.children == ("k3", "k4") and new_west.summary == "west one | west two"
    [new_root] = by_level[2]
    assert new_root.children == (east.id, new_west.id) and new_root.id != root.id


def test_an_extractive_tree_updated_gives_each_node_above_the_new_leaf_the_mean_of_its_children() -> None:
    east, west, root = tree()
    leaves = np.asarray([vector(1, 0), vector(0.9, 0.1), vector(0, 1), vector(0.1, 0.9)])

    def no_model(texts: list[str]) -> np.ndarray:
        raise AssertionError(f"embedded {texts}")

    nodes = update_tree(
        [east, west, root], ["k1", "k2", "k3", "k4"], ["east one", "east two", "west one", "west two"], leaves,
        [(), (), (), ()], summarize=join, vectors_of=SummaryVectors(from_sources=True, embed=no_model),
    )
    assert nodes is not None
    [kept, new_west, new_root] = nodes
    assert kept is east
    assert np.allclose(new_west.embedding, unit(leaves[2] + leaves[3]))
    # The kept node's vector is the one the tree held, not one computed again from its leaves.
    assert np.allclose(new_root.embedding, unit(east.embedding + new_west.embedding))


def test_a_node_left_without_leaves_goes_and_an_unchanged_tree_is_returned_as_it_was() -> None:
    east, west, root = tree()
    leaves = (["k1", "k2", "k3"], ["east one", "east two", "west one"])
    vectors = np.asarray([vector(1, 0), vector(0.9, 0.1), vector(0, 1)])
    assert update_tree([east, west, root], *leaves, vectors, [(), (), ()], summarize=join, vectors_of=EMBEDDED_TEXT) == [
        east, west, root,
    ]
    nodes = update_tree([east, west, root], ["k1", "k2"], ["east one", "east two"], vectors[:2], [(), ()],
                        summarize=join, vectors_of=EMBEDDED_TEXT)
    assert nodes is not None and [node.level for node in nodes] == [1, 2]
    assert nodes[0] is east and nodes[1].children == (east.id,)
    assert update_tree([east, west, root], ["k9"], ["other"], vectors[:1], [()], summarize=join, vectors_of=EMBEDDED_TEXT) is None


def test_the_weekly_schedule_asks_refresh_graph_for_a_full_rebuild_it_accepts() -> None:
    job = defs.resolve_job_def("refresh_graph")
    config = weekly_graph_rebuild.evaluate_tick(dg.build_schedule_context()).run_requests[0].run_config
    assert dg.validate_run_config(job, config)["ops"]["communities"]["config"]["rebuild"] == "full"
