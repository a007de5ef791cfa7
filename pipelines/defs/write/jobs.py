"""The job of the per-document side: every asset a changed source file affects, over a range of
partitions. (The graph-wide side's job, refresh_graph, lives with its schedule.)"""

import dagster as dg

PER_DOCUMENT_GROUP = "documents"
GRAPH_GROUP = "graph"

# Everything a changed source affects before the graph-wide recomputation: the per-document group
# and what follows from it (extraction), but not the graph group.
PER_DOCUMENT_SELECTION = dg.AssetSelection.groups(PER_DOCUMENT_GROUP).downstream() - dg.AssetSelection.groups(
    GRAPH_GROUP
)

ingest_documents = dg.define_asset_job(
    "ingest_documents",
    selection=PER_DOCUMENT_SELECTION,
    description="Documents, chunks, embeddings, BM25 statistics (and extraction) for a range of source files.",
)
