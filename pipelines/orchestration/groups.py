"""The asset groups: the definitions tag their assets with these, the jobs select by them, the runner
tells the sides apart by them."""

# Every asset partitioned by `document_partitions` belongs to this group, and only those.
PER_DOCUMENT_GROUP = "documents"
GRAPH_GROUP = "graph"
SESSION_GROUP = "session"
# The read side's assets (the compiled statement, the evaluation) are never part of a write run.
READ_GROUP = "read"
