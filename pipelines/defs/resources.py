"""Resources shared by every asset, configured from lanes.yaml and the environment."""

import dagster as dg

from pipelines.config import load_config
from pipelines.resources.database import DatabaseResource
from pipelines.resources.embedder import EmbedderResource
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.write.summaries.summarizer import SummarizerResource


def embedder_from_settings() -> EmbedderResource:
    """The embedder lanes.yaml describes; an endpoint's key stays in the environment variable it names."""
    embedding = load_config().pipeline.embedding
    return EmbedderResource(
        provider=embedding.provider,
        dimension=embedding.dimension,
        batch_size=embedding.batch_size,
        base_url=embedding.openai.base_url,
        model=embedding.openai.model or None,
        api_key_env=embedding.openai.api_key_env,
        timeout_seconds=embedding.openai.timeout_seconds,
    )


@dg.definitions
def resources() -> dg.Definitions:
    pipeline = load_config().pipeline
    return dg.Definitions(
        resources={
            "database": DatabaseResource(),
            "embedder": embedder_from_settings(),
            "extractor": ExtractorResource.from_settings(pipeline.extraction),
            "summarizer": SummarizerResource.from_settings(pipeline.summaries),
        }
    )
