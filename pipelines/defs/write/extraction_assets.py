"""entities_and_facts: typed entities and sentence-grounded facts per document, with its asset check."""


import dagster as dg

from pipelines.defs.write.partition_metadata import partitioned_result
from pipelines.orchestration.groups import PER_DOCUMENT_GROUP
from pipelines.orchestration.partitions import document_partitions
from pipelines.resources.database import DatabaseResource
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.write.extraction import extraction_sql as q
from pipelines.write.extraction.extraction import extract_documents
from pipelines.write.extraction.extraction_store import DocumentCounts
from pipelines.write.documents.registry import partition_documents
from pipelines.write.report import StepReport
from pipelines.resources.rows import one_row

@dg.asset(
    group_name=PER_DOCUMENT_GROUP,
    deps=["chunks"],
    partitions_def=document_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    kinds={"postgres", "spacy"},
    description=(
        "Typed entities and sentence-grounded subject-predicate-object facts of each document: "
        "entities resolved by normalised name and kind (near-duplicates, declared acronyms and lone "
        "surnames merged into aliases), the page's subject behind its pronouns and short references, "
        "identical statements kept once, superseded states closed bitemporally."
    ),
)
def entities_and_facts(
    context: dg.AssetExecutionContext,
    database: DatabaseResource,
    extractor: ExtractorResource,
) -> dg.MaterializeResult:
    report = StepReport(unit="documents", preview_columns=("subject", "predicate", "object", "valid from", "statement"))
    db = database.get_database()
    with db.connection() as connection:
        source_of = partition_documents(connection, context.partition_keys)
    result = extract_documents(
        db, extractor.get_extractor(), list(source_of), extractor.merge_similarity, progress=context.log.info
    )
    for missing in result.missing:
        report.skip(missing, "no such document", source_of[missing])
    for document_id, counts in result.documents.items():
        report.count(source_of[document_id], _partition_counts(counts))
    report.processed = len(result.documents)
    with db.connection() as connection:
        report.rows = one_row(connection.execute(q.LIVE_FACT_COUNT), "the live fact count")[0]
        report.preview_rows = connection.execute(q.FACT_PREVIEW, {"ids": list(result.documents)}).fetchall()
    values = report.finish().metadata()
    values.update({
        "extractor": extractor.provider,
        "entities_created": result.total("entities_created"),
        "entities_merged": result.total("entities_merged"),
        "mentions": result.total("mentions"),
        "documents_retracted": result.total("retracted"),
        # Where the step's time went: extraction (parallel, no lock), copying the staged rows,
        # resolving their names against the committed graph (no lock), waiting for the graph write
        # lock, the merge under it (the serial part of the step), and moving the new names into
        # the trigram index after each commit (no lock).
        "extract_seconds": round(result.extract_seconds, 3),
        "stage_seconds": round(result.stage_seconds, 3),
        "resolve_ahead_seconds": round(result.resolve_ahead_seconds, 3),
        "lock_wait_seconds": round(result.lock_wait_seconds, 3),
        "merge_seconds": round(result.merge_seconds, 3),
        "name_index_seconds": round(result.name_index_seconds, 3),
    })
    return partitioned_result(context, report, values)


def _partition_counts(counts: DocumentCounts) -> dict[str, int]:
    """A document's facts as the step's counts, and its entity tallies."""
    return {
        "inserted": counts.facts_inserted,
        "updated": counts.facts_superseded,
        "deleted": counts.facts_closed,
        "unchanged": counts.facts_stated - counts.facts_inserted,
        "entities_created": counts.entities_created,
        "entities_merged": counts.entities_merged,
        "mentions": counts.mentions,
        "documents_retracted": int(counts.retracted),
    }


@dg.asset_check(asset=entities_and_facts, description="No live fact points at an entity that does not exist.")
def live_facts_reference_entities(database: DatabaseResource) -> dg.AssetCheckResult:
    with database.connection() as connection:
        dangling = connection.execute(q.DANGLING_FACTS).fetchall()
    return dg.AssetCheckResult(
        passed=not dangling,
        metadata={"dangling_facts": len(dangling), "examples": dg.MetadataValue.json([list(row) for row in dangling])},
    )
