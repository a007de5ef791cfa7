"""The whole write side on most of the demo corpus, materialized for real in-process through the runner:
per-document assets and extraction over the partitions, then the graph-wide assets and every check."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import dagster as dg
import pytest

from pipelines.config import load_config
from tests import REPOSITORY
from pipelines.defs.write import document_assets, extraction_assets, graph_assets, jobs
from pipelines.defs.write.graph_schedule import refresh_graph
from pipelines.resources.database import Database, DatabaseResource
from pipelines.resources.embedder import EmbedderResource
from pipelines.resources.migrations import hnsw_indexes
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.write.summaries.summarizer import SummarizerResource
from pipelines.orchestration.runner import WriteReport, ingest, materialize

SETTINGS = load_config(REPOSITORY / "lanes.yaml").pipeline
DEMO = REPOSITORY / "pipelines" / "demo_corpus" / "documents"
# The documents every assertion below needs (superseded leads and states, aliases, a profile with
# sources in three documents); the rest of the demo would only make the test slower.
DEMO_SUBSET = (
    "battery-handling-standard.md", "company-overview.md", "lantern-airspace-review.md",
    "leadership-decisions-log-2025.md", "people-and-teams.md", "project-heron.md", "project-lantern.md",
    "project-mooring.md", "project-tessel.md",
)
DEFINITIONS = dg.Definitions(
    assets=[
        document_assets.documents, document_assets.chunks, document_assets.chunk_embeddings,
        document_assets.bm25_index, extraction_assets.entities_and_facts, graph_assets.entity_graph,
        graph_assets.communities, graph_assets.entity_profiles, graph_assets.raptor_levels,
    ],
    asset_checks=[
        extraction_assets.live_facts_reference_entities, graph_assets.graph_embeddings_have_configured_width,
        graph_assets.community_coverage,
    ],
    jobs=[jobs.ingest_documents, refresh_graph],
    resources={
        "database": DatabaseResource(),
        "embedder": EmbedderResource(),
        "extractor": ExtractorResource(),
        "summarizer": SummarizerResource(max_chars=SETTINGS.summaries.max_chars),
    },
)


@dataclass
class DemoGraph:
    database: Database
    instance: dg.DagsterInstance
    first: WriteReport
    second: WriteReport


@pytest.fixture(scope="module")
def demo(make_schema_url: Callable[[], str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoGraph]:
    corpus = tmp_path_factory.mktemp("demo") / "documents"
    corpus.mkdir()
    for name in DEMO_SUBSET:
        shutil.copy(DEMO / name, corpus / name)
    url = make_schema_url()
    instance = dg.DagsterInstance.ephemeral()
    first = ingest(corpus, definitions=DEFINITIONS, instance=instance, database_url=url)
    # Extraction again over every partition: nothing may change.
    second = materialize(["entities_and_facts"], definitions=DEFINITIONS, instance=instance, database_url=url)
    database = Database(url)
    yield DemoGraph(database, instance, first, second)
    database.close()


def rows(database: Database, statement: str, parameters: dict | None = None) -> list[tuple]:
    with database.connection() as connection:
        return connection.execute(statement, parameters or {}).fetchall()


def test_entities_are_typed_and_resolved(demo: DemoGraph) -> None:
    kinds = dict(rows(demo.database, "SELECT name, kind FROM entity"))
    assert kinds["Project Heron"] == "project"
    assert kinds["Aino Virtanen"] == "person"
    assert kinds["HX-4417"] == "code"
    assert kinds["Porto"] == "place"
    assert kinds["Safety and Compliance Team"] == "team"
    # The short name is an alias of the project, not an entity of its own.
    assert "Heron" not in kinds
    [(aliases,)] = rows(demo.database, "SELECT aliases FROM entity WHERE name = 'Project Heron'")
    assert "heron" in aliases
    [(duplicates,)] = rows(
        demo.database, "SELECT count(*) FROM (SELECT normalized_name FROM entity GROUP BY 1 HAVING count(*) > 1) d"
    )
    assert duplicates == 0


def test_facts_are_grounded_in_their_source_chunk(demo: DemoGraph) -> None:
    facts = rows(
        demo.database,
        "SELECT f.statement, c.text, f.document_id, c.document_id FROM fact f JOIN chunk c ON c.id = f.source_chunk_id",
    )
    [(total,)] = rows(demo.database, "SELECT count(*) FROM fact")
    assert len(facts) == total > 100
    for statement, chunk_text, fact_document, chunk_document in facts:
        assert statement in chunk_text
        assert statement[-1] in ".!?"
        assert fact_document == chunk_document


def test_each_partition_reports_the_facts_of_its_own_file(demo: DemoGraph) -> None:
    inserted, entities = {}, {}
    for name in DEMO_SUBSET:
        key = f"documents/{name}"
        records = demo.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("entities_and_facts"), asset_partitions=[key]), limit=3
        ).records
        assert [record.run_id for record in records] == demo.second.run_ids + demo.first.run_ids[:1]
        second, first = (
            {name: value.value for name, value in record.asset_materialization.metadata.items()} for record in records
        )
        # What the first extraction of the file inserted, the second states again and leaves alone.
        assert first["inserted"] == second["unchanged"] > 0 and second["inserted"] == 0
        assert second["run_unchanged"] == demo.second.assets["entities_and_facts"]["unchanged"]
        inserted[key], entities[key] = first["inserted"], first["entities_created"]
        assert "entities_created" in second and "run_entities_created" in first and "rows" not in first
    assert sum(inserted.values()) == demo.first.assets["entities_and_facts"]["inserted"]
    assert sum(entities.values()) == demo.first.assets["entities_and_facts"]["entities_created"]
    assert len(set(inserted.values())) > 1 and len(set(entities.values())) > 1


def test_a_second_extraction_changes_nothing(demo: DemoGraph) -> None:
    first, second = demo.first.assets["entities_and_facts"], demo.second.assets["entities_and_facts"]
    assert first["inserted"] > 100 and first["entities_created"] > 30
    assert (second["inserted"], second["deleted"], second["updated"], second["entities_created"]) == (0, 0, 0, 0)
    assert second["unchanged"] == first["inserted"]
    [(duplicates,)] = rows(
        demo.database,
        """
        SELECT count(*) FROM (
            SELECT 1 FROM fact WHERE recorded_to IS NULL
            GROUP BY lower(statement), subject_id, predicate, coalesce(object_id, ''), source_chunk_id
            HAVING count(*) > 1
        ) d
        """,
    )
    assert duplicates == 0


def live_values(database: Database, subject: str, predicate: str) -> set[str]:
    return {
        value
        for (value,) in rows(
            database,
            """
            SELECT coalesce(o.name, f.object_value) FROM live_fact f
            JOIN entity s ON s.id = f.subject_id LEFT JOIN entity o ON o.id = f.object_id
            WHERE s.name = %(subject)s AND f.predicate = %(predicate)s
            """,
            {"subject": subject, "predicate": predicate},
        )
    }


def test_superseding_states_close_the_old_claims(demo: DemoGraph) -> None:
    assert live_values(demo.database, "Project Lantern", "status") == {"paused"}
    assert live_values(demo.database, "Project Mooring", "status") == {"in production"}
    leaders = {
        subject
        for (subject,) in rows(
            demo.database,
            """
            SELECT s.name FROM live_fact f JOIN entity s ON s.id = f.subject_id JOIN entity o ON o.id = f.object_id
            WHERE f.predicate = 'lead' AND o.name = 'Project Heron'
            """,
        )
    }
    assert leaders == {"Tomasz Wielgus"}
    # "As of 2024-12-01, Maren Okafor leads Project Heron." is no longer believed as open-ended; it is
    # recorded again as valid until the new lead took over.
    history = rows(
        demo.database,
        """
        SELECT f.valid_from::date::text, f.valid_to::date::text, f.recorded_to IS NOT NULL
        FROM fact f WHERE f.statement = 'As of 2024-12-01, Maren Okafor leads Project Heron.'
        ORDER BY f.recorded_from, f.id
        """,
    )
    assert history == [("2024-12-01", None, True), ("2024-12-01", "2025-04-01", False)]


def test_graph_assets_and_checks_pass(demo: DemoGraph) -> None:
    assert set(demo.first.checks) >= {
        "live_facts_reference_entities", "graph_embeddings_have_configured_width", "community_coverage",
        "raptor_root_count",
    }
    assert all(demo.first.checks.values()), demo.first.checks
    communities = demo.first.assets["communities"]
    assert communities["size_chart"].startswith("![Community sizes per level](data:image/png;base64,")
    assert communities["inserted"] > 0
    assert demo.first.assets["raptor_levels"]["roots"] <= SETTINGS.raptor.root_count


def test_entity_graph_reports_how_well_it_connects_chunks(demo: DemoGraph) -> None:
    figures = demo.first.assets["entity_graph"]
    [(pairs, chunks, single, entities, edges)] = rows(
        demo.database,
        """
        SELECT (SELECT count(DISTINCT (entity_id, chunk_id)) FROM entity_mention),
               (SELECT count(*) FROM chunk),
               (SELECT count(*) FROM (SELECT entity_id FROM entity_mention GROUP BY entity_id
                                      HAVING count(DISTINCT chunk_id) = 1) one),
               (SELECT count(DISTINCT entity_id) FROM entity_mention),
               (SELECT count(DISTINCT (least(subject_id, object_id), greatest(subject_id, object_id)))
                FROM live_fact WHERE object_id IS NOT NULL AND object_id <> subject_id)
        """,
    )
    assert figures["entities_per_chunk"] == pytest.approx(pairs / chunks, abs=1e-3)
    assert figures["single_chunk_entity_share"] == pytest.approx(single / entities, abs=1e-3)
    assert figures["entity_edges_per_entity"] == pytest.approx(edges / figures["entities"], abs=1e-3)
    assert 0 < figures["single_chunk_entity_share"] < 1


def test_degrees_count_live_facts(demo: DemoGraph) -> None:
    [(mismatched,)] = rows(
        demo.database,
        """
        SELECT count(*) FROM entity e
        WHERE e.degree <> (SELECT count(*) FROM live_fact f WHERE f.subject_id = e.id)
                        + (SELECT count(*) FROM live_fact f WHERE f.object_id = e.id)
        """,
    )
    assert mismatched == 0


def test_communities_cover_the_related_entities(demo: DemoGraph) -> None:
    [(related, covered)] = rows(
        demo.database,
        """
        WITH related AS (
            SELECT subject_id AS id FROM live_fact WHERE object_id IS NOT NULL
            UNION SELECT object_id FROM live_fact WHERE object_id IS NOT NULL
        )
        SELECT (SELECT count(*) FROM related),
               (SELECT count(*) FROM related r WHERE EXISTS (SELECT 1 FROM community c WHERE r.id = ANY(c.members)))
        """,
    )
    assert related > 30 and covered / related >= 0.95
    for level, parent_level, summary, members, dimensions in rows(
        demo.database,
        """
        SELECT c.level, p.level, c.summary, cardinality(c.members), vector_dims(c.embedding)
        FROM community c LEFT JOIN community p ON p.id = c.parent_id
        """,
    ):
        assert parent_level is None if level == 0 else parent_level == level - 1
        assert 0 < len(summary) <= SETTINGS.summaries.max_chars
        assert members >= 2 and dimensions == SETTINGS.embedding.dimension
    labels = [label for (label,) in rows(demo.database, "SELECT label FROM community")]
    assert any("Aino Virtanen" in label for label in labels)


def test_well_connected_entities_have_profiles(demo: DemoGraph) -> None:
    profiles = dict(
        rows(demo.database, "SELECT e.name, p.summary FROM profile p JOIN entity e ON e.id = p.entity_id")
    )
    assert "Aino Virtanen" in profiles and "Battery Handling Standard" in profiles["Aino Virtanen"]
    [(missing,)] = rows(
        demo.database,
        """
        SELECT count(*) FROM entity e WHERE e.degree >= %(min_degree)s
          AND NOT EXISTS (SELECT 1 FROM profile p WHERE p.entity_id = e.id)
        """,
        {"min_degree": SETTINGS.profiles.min_degree},
    )
    assert missing == 0


def test_raptor_tree_rises_to_few_roots(demo: DemoGraph) -> None:
    levels = dict(rows(demo.database, "SELECT level, count(*) FROM raptor_node GROUP BY level"))
    assert len(levels) >= 2
    assert 1 <= levels[max(levels)] <= SETTINGS.raptor.root_count
    chunk_ids = {chunk_id for (chunk_id,) in rows(demo.database, "SELECT id FROM chunk")}
    nodes = {node_id: (level, children) for node_id, level, children in rows(demo.database, "SELECT id, level, children FROM raptor_node")}
    leaves_covered = set()
    for level, children in nodes.values():
        if level == 1:
            assert set(children) <= chunk_ids
            leaves_covered |= set(children)
        else:
            assert all(nodes[child][0] == level - 1 for child in children)
    assert leaves_covered == chunk_ids


def test_a_first_build_leaves_every_hnsw_index_in_place_and_every_graph_row_embedded(
    demo: DemoGraph, make_schema_url: Callable[[], str]
) -> None:
    # The first build writes the graph's vectors with the HNSW indexes dropped, then builds them.
    fresh = Database(make_schema_url())
    try:
        with fresh.connection() as connection:
            migrated = [name for name, _ in hnsw_indexes(connection)]
    finally:
        fresh.close()
    with demo.database.connection() as connection:
        assert [name for name, _ in hnsw_indexes(connection)] == migrated
        assert {"fact_embedding_hnsw", "entity_embedding_hnsw"} <= set(migrated)
    [(invalid, facts_without, entities_without)] = rows(
        demo.database,
        """
        SELECT (SELECT count(*) FROM pg_index WHERE NOT indisvalid),
               (SELECT count(*) FROM live_fact WHERE embedding IS NULL),
               (SELECT count(*) FROM entity WHERE degree > 0 AND embedding IS NULL)
        """,
    )
    assert (invalid, facts_without, entities_without) == (0, 0, 0)
