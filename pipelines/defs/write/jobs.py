"""The job of the per-document side: every asset partitioned by source file, over a range of
partitions. (The graph-wide side's job, refresh_graph, lives with its schedule.)"""

import dagster as dg

# Every asset partitioned by `document_partitions` belongs to this group, and only those.
PER_DOCUMENT_GROUP = "documents"
GRAPH_GROUP = "graph"
# The read side's assets (the compiled statement, the evaluation) are never part of a write run.
READ_GROUP = "read"

ingest_documents = dg.define_asset_job(
    "ingest_documents",
    selection=dg.AssetSelection.groups(PER_DOCUMENT_GROUP),
    description="Documents, chunks, embeddings, BM25 statistics and extraction for a range of source files.",
)
