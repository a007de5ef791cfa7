"""The incremental graph refresh on part of the demo corpus, for real through the runner: one document
added, changed and deleted after a build, a refused file, and the full rebuild beside a build from
scratch over the same tables. The stages run in order on one database, each test reading the state
its stage left."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import dagster as dg
import pytest

from pipelines.defs.write.graph_schedule import REBUILDING_ASSETS, full_rebuild_config
from pipelines.orchestration.runner import WriteReport, ingest, materialize
from pipelines.resources.database import Database
from pipelines.write.graph import graph_store
from tests.write.test_graph import DEFINITIONS, DEMO, DEMO_SUBSET

ADDED = "project-tessel.md"
CHANGE = "\n\n## Firmware\n\nAino Virtanen works on the firmware of Project Tessel.\n"
# Every column, the embedding as text: "kept" means byte-identical.
SNAPSHOTS = {
    "community": "SELECT id, level, parent_id, label, summary, members, embedding::text, scopes, source_digest FROM community",
    "profile": "SELECT entity_id, summary, fact_count, embedding::text, scopes, source_digest FROM profile",
    "raptor_node": "SELECT id, level, summary, children, embedding::text, scopes, source_digest FROM raptor_node",
}
# What the graph was built over at each stage: live chunks, and entities in live facts.
SOURCES = {
    "chunk": "SELECT c.id, c.text FROM chunk c JOIN document d ON d.id = c.document_id WHERE d.retracted_at IS NULL",
    "entity": "SELECT id FROM entity WHERE degree > 0",
}
FORGET_GRAPH = """
DELETE FROM community; DELETE FROM profile; DELETE FROM raptor_node; DELETE FROM community_edge;
DELETE FROM lanegraph_setting WHERE key LIKE 'graph_built_with:%'
"""
ASSET_OF = {"community": "communities", "profile": "entity_profiles", "raptor_node": "raptor_levels"}


def snapshot(database: Database) -> dict[str, dict[str, tuple]]:
    with database.connection() as connection:
        return {
            table: {row[0]: row for row in connection.execute(query)}
            for table, query in {**SNAPSHOTS, **SOURCES}.items()
        }


def rows(database: Database, statement: str, parameters: dict | None = None) -> list[tuple]:
    with database.connection() as connection:
        return connection.execute(statement, parameters or {}).fetchall()


@dataclass
class Stages:
    database: Database
    reports: dict[str, WriteReport] = field(default_factory=dict)
    snapshots: dict[str, dict[str, dict[str, tuple]]] = field(default_factory=dict)


@pytest.fixture(scope="module")
def stages(make_schema_url: Callable[[], str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stages]:
    corpus = tmp_path_factory.mktemp("incremental") / "documents"
    corpus.mkdir()
    for name in DEMO_SUBSET:
        if name != ADDED:
            shutil.copy(DEMO / name, corpus / name)
    url = make_schema_url()
    instance = dg.DagsterInstance.ephemeral()
    database = Database(url)
    result = Stages(database)

    def stage(name: str, run: Callable[[], WriteReport]) -> None:
        result.reports[name] = run()
        result.snapshots[name] = snapshot(database)

    def ingest_corpus() -> WriteReport:
        return ingest(corpus, definitions=DEFINITIONS, instance=instance, database_url=url)

    stage("built", ingest_corpus)
    (corpus / "empty.md").write_text("")
    stage("refused", ingest_corpus)
    shutil.copy(DEMO / ADDED, corpus / ADDED)
    stage("added", ingest_corpus)
    (corpus / ADDED).write_text((DEMO / ADDED).read_text() + CHANGE)
    stage("changed", ingest_corpus)
    (corpus / ADDED).unlink()
    stage("deleted", ingest_corpus)
    stage("full", lambda: materialize(
        list(REBUILDING_ASSETS), definitions=DEFINITIONS, instance=instance, database_url=url,
        run_config=full_rebuild_config(),
    ))
    # The graph-wide rows built from nothing over the same tables: with no record of a build, the
    # default (incremental) run config builds in full.
    with database.connection() as connection:
        connection.execute(FORGET_GRAPH)
    stage("scratch", lambda: materialize(
        list(REBUILDING_ASSETS), definitions=DEFINITIONS, instance=instance, database_url=url,
    ))
    # Once more, reading the facts of two communities or entities a query instead of hundreds.
    with database.connection() as connection:
        connection.execute(FORGET_GRAPH)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(graph_store, "ROWS_PER_FACT_QUERY", 2)
        stage("scratch in pairs", lambda: materialize(
            list(REBUILDING_ASSETS), definitions=DEFINITIONS, instance=instance, database_url=url,
        ))
    yield result
    database.close()


def changed_keys(before: dict[str, tuple], after: dict[str, tuple]) -> set[str]:
    """Keys of rows written or removed between two snapshots of a table."""
    return {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def redone(report: WriteReport, asset: str) -> tuple[str, int, int]:
    values = report.assets[asset]
    return values["mode"], values["recomputed"], values["kept"]


def assert_reported_rows_are_the_written_ones(
    before: dict[str, dict[str, tuple]], after: dict[str, dict[str, tuple]], report: WriteReport
) -> None:
    """An incremental refresh reports as kept exactly the rows byte-identical to the stage before
    (ids, summaries, embeddings), and as recomputed all the others, a minority."""
    for table, asset in ASSET_OF.items():
        mode, recomputed, kept = redone(report, asset)
        identical = {key for key in after[table] if after[table][key] == before[table].get(key)}
        assert mode == "incremental", table
        assert (recomputed, kept) == (len(after[table]) - len(identical), len(identical)), table
        assert kept > 0 and recomputed < len(after[table]), table


def test_the_first_build_is_full_and_a_refused_file_refreshes_nothing(stages: Stages) -> None:
    built = stages.reports["built"]
    assert all(redone(built, asset)[0] == "full" for asset in ASSET_OF.values())
    assert all(stages.snapshots["built"][table] for table in SNAPSHOTS)
    refused = stages.reports["refused"]
    assert refused.registration is not None and [p.location for p in refused.registration.ignored][0].endswith("empty.md")
    assert refused.run_ids == [] and not refused.assets
    assert stages.snapshots["refused"] == stages.snapshots["built"]


def test_adding_a_document_redoes_only_what_it_touched(stages: Stages) -> None:
    before, after, report = stages.snapshots["built"], stages.snapshots["added"], stages.reports["added"]
    assert_reported_rows_are_the_written_ones(before, after, report)
    touched = {
        entity for (entity,) in rows(
            stages.database,
            """
            SELECT unnest(ARRAY[f.subject_id, f.object_id]) FROM fact f JOIN document d ON d.id = f.document_id
            JOIN document_source s ON s.key = d.source_key WHERE s.path LIKE %(name)s
            """,
            {"name": f"%/{ADDED}"},
        ) if entity is not None
    }
    assert touched
    # A community kept as it was holds no entity of the new document's facts; a profile written
    # again is of one of them.
    kept_communities = after["community"].keys() & before["community"].keys() - changed_keys(before["community"], after["community"])
    assert kept_communities and all(touched.isdisjoint(after["community"][key][5]) for key in kept_communities)
    assert changed_keys(before["profile"], after["profile"]) <= touched
    # A RAPTOR node written again lies above a chunk of the new document.
    new_chunks = after["chunk"].keys() - before["chunk"].keys()
    nodes = after["raptor_node"]
    written = changed_keys(before["raptor_node"], nodes) & nodes.keys()
    assert new_chunks and written and all(set(nodes[key][3]) & (new_chunks | written) for key in written)


def chunks_under(nodes: dict[str, tuple]) -> list[str]:
    """The leaves of a RAPTOR snapshot: level 1 nodes' children."""
    return [child for node in nodes.values() if node[1] == 1 for child in node[3]]


@pytest.mark.parametrize(("stage", "previous"), [("changed", "added"), ("deleted", "changed")])
def test_changing_or_deleting_a_document_updates_what_it_touched(stages: Stages, stage: str, previous: str) -> None:
    report, after = stages.reports[stage], stages.snapshots[stage]
    assert_reported_rows_are_the_written_ones(stages.snapshots[previous], after, report)
    # The tree holds exactly the live chunks, each once, and its levels stay linked.
    leaves = chunks_under(after["raptor_node"])
    assert sorted(leaves) == sorted(after["chunk"])
    for node in after["raptor_node"].values():
        if node[1] > 1:
            assert all(after["raptor_node"][child][1] == node[1] - 1 for child in node[3])
    assert all(set(community[5]) <= after["entity"].keys() for community in after["community"].values())
    for community in after["community"].values():
        if community[2] is not None:
            assert set(community[5]) <= set(after["community"][community[2]][5])
    if stage == "changed":
        # Every RAPTOR node above the chunk holding the new text is summarised anew.
        nodes, earlier = after["raptor_node"], stages.snapshots[previous]["raptor_node"]
        [chunk] = [key for key, row in after["chunk"].items() if "firmware of Project Tessel" in row[1]]
        holders = {key for key, node in nodes.items() if chunk in node[3]}
        while holders:
            assert all(nodes[key] != earlier.get(key) for key in holders)
            holders = {key for key, node in nodes.items() if set(node[3]) & holders}
    else:
        # The profiles the document brought go with it, and a profile summarising the same facts as
        # before the document was added is that build's, byte for byte. (Facts of other documents
        # the document superseded stay closed: retraction does not reopen them.)
        built, added = stages.snapshots["built"]["profile"], stages.snapshots["added"]["profile"]
        assert added.keys() - built.keys() and not (added.keys() - built.keys()) & after["profile"].keys()
        same_facts = [key for key in after["profile"].keys() & built.keys() if after["profile"][key][5] == built[key][5]]
        assert same_facts and all(after["profile"][key] == built[key] for key in same_facts)


def test_a_full_rebuild_equals_a_build_from_scratch(stages: Stages) -> None:
    for stage in ("full", "scratch"):
        assert all(redone(stages.reports[stage], asset)[0] == "full" for asset in ASSET_OF.values())
    assert stages.snapshots["full"] == stages.snapshots["scratch"]


def test_how_many_rows_a_fact_query_serves_changes_no_row(stages: Stages) -> None:
    assert stages.snapshots["scratch in pairs"] == stages.snapshots["scratch"]


def test_a_row_recomputed_incrementally_is_what_the_full_rebuild_makes_of_the_same_sources(stages: Stages) -> None:
    """Vectors included: an extractive community's or RAPTOR node's vector is the mean of its sources'
    vectors, and those read back from the tables must give the vector the full rebuild computes."""
    incremental, full, built = stages.snapshots["deleted"], stages.snapshots["full"], stages.snapshots["built"]
    recomputed = 0
    for table in SNAPSHOTS:
        # The source digest is every snapshot's last column.
        same_sources = [key for key in incremental[table].keys() & full[table].keys()
                        if incremental[table][key][-1] == full[table][key][-1]]
        assert all(incremental[table][key] == full[table][key] for key in same_sources), table
        recomputed += sum(incremental[table][key] != built[table].get(key) for key in same_sources)
    assert recomputed > 0
