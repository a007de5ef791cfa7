"""The partitions of the per-document assets: one dynamic partition per source file.

A key is a source's key ("documents/project-heron.md", "corpus/musique.jsonl"): a markdown or text
file holds one document, a JSONL file many. Every per-document asset (documents, chunks,
chunk_embeddings, bm25_index, entities_and_facts) uses this definition and maps its partition keys
to documents with `pipelines.write.documents.registry.partition_documents`.
"""

from collections.abc import Collection, Sequence

import dagster as dg

DOCUMENT_PARTITIONS = "documents"

document_partitions = dg.DynamicPartitionsDefinition(name=DOCUMENT_PARTITIONS)

# Dagster's run tags for a run over a range of partitions (what a single-run backfill launches).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def covering_range_tags(ordered_keys: Sequence[str], wanted: Collection[str]) -> dict[str, str]:
    """Tags of one run over the smallest range of `ordered_keys` (the instance's partition order)
    that holds every wanted key; keys in between are no-ops for the per-document assets."""
    positions = [index for index, key in enumerate(ordered_keys) if key in wanted]
    if not positions:
        raise ValueError("no wanted key is a partition")
    return {RANGE_START_TAG: ordered_keys[positions[0]], RANGE_END_TAG: ordered_keys[positions[-1]]}
