"""A code location that a step process of the multiprocess executor imports in a moment: the
per-document assets and their checks, with the word-hash embedder and the rule-based extractor
(no model to load), and none of the evaluation, graph or read side."""

import dagster as dg

from pipelines.config import load_config
from pipelines.defs.write import document_assets, extraction_assets, jobs
from pipelines.resources.database import DatabaseResource
from pipelines.write.extraction.extractor import ExtractorResource
from tests.reliability.tenancy import HashedEmbedderResource


def definitions() -> dg.Definitions:
    return dg.Definitions(
        assets=[
            document_assets.documents, document_assets.chunks, document_assets.chunk_embeddings,
            document_assets.bm25_index, extraction_assets.entities_and_facts,
        ],
        asset_checks=[
            document_assets.every_chunk_embedded, document_assets.bm25_statistics_match_chunks,
            extraction_assets.live_facts_reference_entities,
        ],
        jobs=[jobs.ingest_documents],
        resources={
            "database": DatabaseResource(),
            "embedder": HashedEmbedderResource(dimension=load_config().pipeline.embedding.dimension),
            "extractor": ExtractorResource(provider="rules"),
        },
    )
