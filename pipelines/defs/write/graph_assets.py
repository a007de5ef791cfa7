"""The graph-wide assets (group "graph"): entity graph, communities, entity profiles, RAPTOR levels.

Unpartitioned: each recomputes from the tables the per-document assets keep up to date. Tunables
are run config whose defaults come from lanes.yaml when the run starts (`run_config.py`). Communities,
profiles and the RAPTOR tree redo by default only what changed since their last build (`rebuild:
incremental`, see graph_store); `rebuild: full` recomputes them all, as the weekly schedule does.
Each reports which mode ran and how many rows it recomputed, kept and removed.
"""

import dagster as dg

from pipelines.config import CommunitySettings, RaptorSettings
from pipelines.defs.write.graph_metadata import dagster_metadata
from pipelines.defs.write.refresh_checks import follows_its_sources
from pipelines.defs.write.run_config import lanes_yaml_default
from pipelines.orchestration.groups import GRAPH_GROUP
from pipelines.resources.database import DatabaseResource
from pipelines.resources.embedder import EmbedderResource
from pipelines.write.summaries.summarizer import SummarizerResource
from pipelines.write.graph import graph_sql as q
from pipelines.write.graph.graph_store import (
    RebuildMode,
    Redone,
    build_communities,
    build_profiles,
    build_raptor,
    refresh_entity_graph,
)
from pipelines.write.graph.refresh_state import refreshing
from pipelines.write.plots import sizes_per_level_chart
from pipelines.write.report import StepReport, markdown_table
from pipelines.resources.rows import one_row

# Share of related entities (joined to another by a live fact) that must belong to a community;
# only a vertex that Leiden leaves alone in its own part is missing.
COMMUNITY_COVERAGE_THRESHOLD = 0.95


def _rows(database: DatabaseResource, statement: str) -> int:
    with database.connection() as connection:
        return one_row(connection.execute(statement), "a row count")[0]


def _count_redone(step: StepReport, redone: Redone, rows_before: int) -> dict[str, object]:
    """The step's counts from what the build redid: recomputed rows are inserted (or rewritten in
    place), kept rows unchanged; a full build deletes every row it found."""
    step.inserted = redone.recomputed
    step.unchanged = redone.kept
    step.deleted = rows_before if redone.mode == "full" else redone.removed
    return {
        "mode": redone.mode, "recomputed": redone.recomputed, "kept": redone.kept, "removed": step.deleted,
        "malformed_removed": redone.malformed,
    }


@dg.asset(
    group_name=GRAPH_GROUP,
    deps=["entities_and_facts"],
    kinds={"postgres"},
    description=(
        "Entity kinds by mention majority, degrees over live facts, and embeddings of facts, entities and "
        "the ontology's kinds."
    ),
)
def entity_graph(context: dg.AssetExecutionContext, database: DatabaseResource, embedder: EmbedderResource) -> dg.MaterializeResult:
    step = StepReport(unit="entities", preview_columns=("entity", "kind", "degree", "aliases"))
    with refreshing(database.get_database(), "entity_graph"):
        graph = refresh_entity_graph(database.get_database(), embedder.get_embedder().embed, context.log.info)
    step.updated = (
        graph.kinds_reconciled + graph.degrees_updated + graph.facts_embedded + graph.entities_embedded
        + graph.kinds_embedded
    )
    step.deleted = graph.orphans_deleted
    step.rows = step.processed = int(graph.statistics["entities"])
    step.preview_rows = [(name, kind, degree, aliases or 0) for name, kind, degree, aliases in graph.top_entities]
    values = step.finish().metadata()
    values.update(graph.statistics)
    values.update({
        "kinds_reconciled": graph.kinds_reconciled,
        "facts_embedded": graph.facts_embedded,
        "entities_embedded": graph.entities_embedded,
        "kinds_embedded": graph.kinds_embedded,
        "entities_per_kind": markdown_table(("kind", "entities"), graph.kinds),
    })
    return dg.MaterializeResult(metadata=dagster_metadata(values))


class CommunitiesConfig(dg.Config):
    rebuild: RebuildMode = "incremental"
    max_size: int = lanes_yaml_default(lambda pipeline: pipeline.communities.max_size)
    resolution: float = lanes_yaml_default(lambda pipeline: pipeline.communities.resolution)
    max_levels: int = lanes_yaml_default(lambda pipeline: pipeline.communities.max_levels)
    seed: int = lanes_yaml_default(lambda pipeline: pipeline.communities.seed)


@dg.asset(
    group_name=GRAPH_GROUP,
    deps=[entity_graph],
    kinds={"postgres", "igraph"},
    description=(
        "Hierarchical Leiden communities of the live entity graph, each labelled, summarised and embedded; "
        "incrementally, only the communities whose entity pairs changed are partitioned again."
    ),
)
def communities(
    context: dg.AssetExecutionContext,
    config: CommunitiesConfig,
    database: DatabaseResource,
    embedder: EmbedderResource,
    summarizer: SummarizerResource,
) -> dg.MaterializeResult:
    step = StepReport(unit="communities", preview_columns=("level", "label", "members", "summary"))
    rows_before = _rows(database, q.COMMUNITY_COUNT)
    settings = CommunitySettings(**config.model_dump(exclude={"rebuild"}))
    model = embedder.get_embedder()
    with refreshing(database.get_database(), "communities"):
        built = build_communities(
            database.get_database(), settings, summarizer.get_summarizer(), model.embed, context.log.info,
            requested=config.rebuild, embedding_model=model.model_id,
        )
    redone = _count_redone(step, built.redone, rows_before)
    step.rows = step.processed = built.communities
    step.preview_rows = built.preview
    values = step.finish().metadata()
    values.update(redone)
    values.update({
        "levels": len(built.sizes_per_level),
        "connected_entities": built.connected_entities,
        "covered_entities": built.covered_entities,
        "sizes_per_level": markdown_table(
            ("level", "communities", "largest", "smallest"),
            [(level, len(sizes), max(sizes), min(sizes)) for level, sizes in sorted(built.sizes_per_level.items())],
        ),
        "size_chart": sizes_per_level_chart("Community sizes per level", built.sizes_per_level, "entities"),
    })
    return dg.MaterializeResult(metadata=dagster_metadata(values))


class ProfilesConfig(dg.Config):
    rebuild: RebuildMode = "incremental"
    min_degree: int = lanes_yaml_default(lambda pipeline: pipeline.profiles.min_degree)


@dg.asset(
    group_name=GRAPH_GROUP,
    deps=[entity_graph],
    kinds={"postgres"},
    description="A summary of each well-connected entity's live facts, embedded.",
)
def entity_profiles(
    context: dg.AssetExecutionContext,
    config: ProfilesConfig,
    database: DatabaseResource,
    embedder: EmbedderResource,
    summarizer: SummarizerResource,
) -> dg.MaterializeResult:
    step = StepReport(unit="profiles", preview_columns=("entity", "facts", "summary"))
    rows_before = _rows(database, q.PROFILE_COUNT)
    model = embedder.get_embedder()
    with refreshing(database.get_database(), "entity_profiles"):
        built = build_profiles(
            database.get_database(), config.min_degree, summarizer.get_summarizer(), model.embed, context.log.info,
            requested=config.rebuild, embedding_model=model.model_id,
        )
    redone = _count_redone(step, built.redone, rows_before)
    step.rows = step.processed = built.profiles
    step.preview_rows = built.preview
    values = step.finish().metadata()
    values.update(redone)
    values["min_degree"] = config.min_degree
    return dg.MaterializeResult(metadata=dagster_metadata(values))


class RaptorConfig(dg.Config):
    rebuild: RebuildMode = "incremental"
    max_levels: int = lanes_yaml_default(lambda pipeline: pipeline.raptor.max_levels)
    root_count: int = lanes_yaml_default(lambda pipeline: pipeline.raptor.root_count)
    reduced_dimensions: int = lanes_yaml_default(lambda pipeline: pipeline.raptor.reduced_dimensions)
    max_clusters: int = lanes_yaml_default(lambda pipeline: pipeline.raptor.max_clusters)
    covariance: str = lanes_yaml_default(lambda pipeline: pipeline.raptor.covariance)
    seed: int = lanes_yaml_default(lambda pipeline: pipeline.raptor.seed)


@dg.asset(
    group_name=GRAPH_GROUP,
    deps=["chunk_embeddings"],
    kinds={"postgres", "sklearn"},
    # Checked inside the asset, so the check holds the tree to the root_count it was built with.
    check_specs=[dg.AssetCheckSpec(
        "raptor_root_count",
        asset="raptor_levels",
        description="The top level of each scope set's RAPTOR tree has between 1 and root_count nodes.",
    )],
    description=(
        "RAPTOR tree over the chunk embeddings: Gaussian-mixture clusters (BIC-chosen count, PCA-reduced), "
        "summarised and embedded level by level up to a few roots; incrementally, new chunks join the nearest "
        "cluster and only the nodes above changed chunks are summarised again."
    ),
)
def raptor_levels(
    context: dg.AssetExecutionContext,
    config: RaptorConfig,
    database: DatabaseResource,
    embedder: EmbedderResource,
    summarizer: SummarizerResource,
) -> dg.MaterializeResult:
    step = StepReport(unit="nodes", preview_columns=("root summary",))
    rows_before = _rows(database, q.RAPTOR_NODE_COUNT)
    settings = RaptorSettings(**config.model_dump(exclude={"rebuild"}))
    model = embedder.get_embedder()
    with refreshing(database.get_database(), "raptor_levels"):
        built = build_raptor(
            database.get_database(), settings, summarizer.get_summarizer(), model.embed, context.log.info,
            requested=config.rebuild, embedding_model=model.model_id,
        )
    redone = _count_redone(step, built.redone, rows_before)
    step.rows = step.processed = sum(built.nodes_per_level.values())
    step.preview_rows = [(summary,) for summary in built.roots]
    values = step.finish().metadata()
    values.update(redone)
    values.update({
        "leaves": built.leaves,
        "levels": len(built.nodes_per_level),
        "roots": len(built.roots),
        "nodes_per_level": markdown_table(("level", "nodes"), sorted(built.nodes_per_level.items())),
        "nodes_chart": sizes_per_level_chart(
            "RAPTOR nodes per level", {level: [count] for level, count in built.nodes_per_level.items()}, "nodes"
        ),
    })
    return dg.MaterializeResult(metadata=dagster_metadata(values), check_results=[_root_count(database, config.root_count)])


def _root_count(database: DatabaseResource, limit: int) -> dg.AssetCheckResult:
    with database.connection() as connection:
        leaves, roots = one_row(connection.execute(q.RAPTOR_ROOTS), "the RAPTOR roots")
    passed = (roots == 0) if leaves == 0 else 1 <= roots <= limit
    return dg.AssetCheckResult(
        check_name="raptor_root_count", passed=passed, metadata={"roots": roots, "root_count": limit, "leaves": leaves}
    )


@dg.asset_check(
    asset=entity_graph,
    description="Every believed fact and every entity in a live fact has an embedding of the configured width.",
)
def graph_embeddings_have_configured_width(
    database: DatabaseResource, embedder: EmbedderResource
) -> dg.AssetCheckResult:
    # The width the asset embedded with: its embedder resource's.
    with database.connection() as connection:
        facts, entities = one_row(
            connection.execute(q.EMBEDDINGS_OF_OTHER_WIDTH, {"dimension": embedder.dimension}),
            "the graph's embeddings of another width",
        )
    return dg.AssetCheckResult(
        passed=facts == 0 and entities == 0,
        metadata={"facts_without": facts, "entities_without": entities, "dimension": embedder.dimension},
    )


@dg.asset_check(asset=communities, description="Entities related to others by live facts belong to a community.")
def community_coverage(database: DatabaseResource) -> dg.AssetCheckResult:
    with database.connection() as connection:
        related, covered = one_row(connection.execute(q.COMMUNITY_COVERAGE), "the community coverage")
    share = covered / related if related else 1.0
    return dg.AssetCheckResult(
        passed=share >= COMMUNITY_COVERAGE_THRESHOLD,
        metadata={"related_entities": related, "covered_entities": covered, "coverage": round(share, 3),
                  "threshold": COMMUNITY_COVERAGE_THRESHOLD},
    )


entity_graph_follows_its_sources = follows_its_sources(entity_graph)
communities_follow_their_sources = follows_its_sources(communities)
entity_profiles_follow_their_sources = follows_its_sources(entity_profiles)
raptor_levels_follow_their_sources = follows_its_sources(raptor_levels)
