"""Which extractor turns chunks into entities and facts; assets take `extractor: ExtractorResource`.

`spacy` (default) parses with the bundled small English model; `rules` needs no model at all; `llm`
asks an OpenAI-compatible chat endpoint for JSON-schema output. Defaults come from lanes.yaml
(`pipeline.extraction`); the LLM's key only from the environment variable it names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import dagster as dg

from pipelines.config import ExtractionSettings
from pipelines.resources.llm import ChatClient
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText
from pipelines.write.extraction.llm_extractor import LLMExtractor
from pipelines.write.extraction.rule_extractor import RuleExtractor
from pipelines.write.extraction.spacy_extractor import SpacyExtractor


class Extractor(Protocol):
    name: str

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        """One extraction per chunk, in the order given."""
        ...


class ExtractorResource(dg.ConfigurableResource):
    provider: Literal["spacy", "rules", "llm"] = "spacy"
    # Entities of one kind whose names are at least this trigram-similar are merged.
    merge_similarity: float = 0.9
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key_env: str = "OPENAI_API_KEY"
    llm_timeout_seconds: float = 60.0
    llm_concurrency: int = 4

    @classmethod
    def from_settings(cls, settings: ExtractionSettings) -> ExtractorResource:
        return cls(
            provider=settings.provider,
            merge_similarity=settings.merge_similarity,
            llm_base_url=settings.llm.base_url,
            llm_model=settings.llm.model,
            llm_api_key_env=settings.llm.api_key_env,
            llm_timeout_seconds=settings.llm.timeout_seconds,
        )

    def get_extractor(self) -> Extractor:
        if self.provider == "spacy":
            return SpacyExtractor()
        if self.provider == "rules":
            return RuleExtractor()
        client = ChatClient(self.llm_base_url, self.llm_model, self.llm_api_key_env, self.llm_timeout_seconds)
        return LLMExtractor(client, concurrency=self.llm_concurrency)
