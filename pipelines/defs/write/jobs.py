"""The job of the per-document side: every asset partitioned by source file, over a range of
partitions. (The graph-wide side's job, refresh_graph, lives with its schedule.)"""

import dagster as dg

from pipelines.orchestration.groups import PER_DOCUMENT_GROUP

ingest_documents = dg.define_asset_job(
    "ingest_documents",
    selection=dg.AssetSelection.groups(PER_DOCUMENT_GROUP),
    description="Documents, chunks, embeddings, BM25 statistics and extraction for a range of source files.",
)
