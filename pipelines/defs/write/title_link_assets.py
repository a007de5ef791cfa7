"""Title links (group "graph"): which chunk names which other document's title."""

import dagster as dg

from pipelines.defs.write.graph_metadata import dagster_metadata
from pipelines.defs.write.refresh_checks import follows_its_sources
from pipelines.orchestration.groups import GRAPH_GROUP
from pipelines.resources.database import DatabaseResource
from pipelines.write.graph import title_link_sql as q
from pipelines.write.graph.refresh_state import refreshing
from pipelines.write.graph.title_links import refresh_title_links
from pipelines.write.report import StepReport


@dg.asset(
    group_name=GRAPH_GROUP,
    deps=["documents", "chunks"],
    kinds={"postgres"},
    description=(
        "Links from each chunk to the documents whose titles it names: a page's title is its main entity, "
        "and the sources lane's bridge hop follows these links."
    ),
)
def title_links(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    step = StepReport(unit="chunks", preview_columns=("most linked document", "links"))
    with refreshing(database.get_database(), "title_links"):
        links = refresh_title_links(database.get_database(), context.log.info)
    step.inserted = links.inserted
    step.deleted = links.deleted
    step.unchanged = links.links - links.inserted
    step.rows = links.links
    step.processed = links.chunks
    step.preview_rows = links.most_linked
    step.details = {
        "linking_chunks": links.linking_chunks,
        "linkable_titles": links.linkable_titles,
        "linked_documents": links.linked_documents,
        "links_per_chunk": round(links.links / links.chunks, 2) if links.chunks else 0.0,
    }
    return dg.MaterializeResult(metadata=dagster_metadata(step.finish().metadata()))


@dg.asset_check(
    asset=title_links,
    description="Every link points at a live document and carries the scopes of both its ends.",
)
def title_links_follow_row_security(database: DatabaseResource) -> dg.AssetCheckResult:
    with database.connection() as connection:
        (out_of_step,) = connection.execute(q.LINKS_OUT_OF_STEP).fetchall()[0]
    return dg.AssetCheckResult(passed=out_of_step == 0, metadata={"links_out_of_step": out_of_step})


title_links_follow_their_sources = follows_its_sources(title_links)
