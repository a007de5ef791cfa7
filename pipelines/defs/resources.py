"""Resources shared by every asset, configured from lanes.yaml and the environment."""

import dagster as dg

from pipelines.config import load_config
from pipelines.resources.database import DatabaseResource
from pipelines.resources.embedder import EmbedderResource
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.write.summaries.summarizer import SummarizerResource


@dg.definitions
def resources() -> dg.Definitions:
    pipeline = load_config().pipeline
    return dg.Definitions(
        resources={
            "database": DatabaseResource(),
            "embedder": EmbedderResource.from_settings(pipeline.embedding),
            "extractor": ExtractorResource.from_settings(pipeline.extraction),
            "summarizer": SummarizerResource.from_settings(pipeline.summaries),
        }
    )
