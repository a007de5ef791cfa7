"""Which extractor turns chunks into entities and facts; assets take `extractor: ExtractorResource`.

`spacy` (default) parses with the bundled small English model; `rules` needs no model at all; `llm`
asks an OpenAI-compatible chat endpoint for JSON-schema output. Defaults come from lanes.yaml
(`pipeline.extraction`); the LLM's key only from the environment variable it names.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Literal, Protocol, runtime_checkable

from pipelines.config import ExtractionSettings
from pipelines.resources.llm import ChatEndpointResource
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText
from pipelines.write.extraction.llm_extractor import LLMExtractor
from pipelines.write.extraction.rule_extractor import RuleExtractor
from pipelines.write.extraction.spacy_extractor import SpacyExtractor


class Extractor(Protocol):
    name: str

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        """One extraction per chunk, in the order given."""
        ...


@runtime_checkable
class ParsesInWorkers(Protocol):
    """An extractor that parses on this machine's cores in worker processes, and can leave one of
    them to other work for a while."""

    def one_worker_fewer(self) -> AbstractContextManager[None]:
        """Inside: one worker fewer at work, never none."""
        ...


class ExtractorResource(ChatEndpointResource):
    provider: Literal["spacy", "rules", "llm"] = "spacy"
    # Entities of one kind whose names are at least this trigram-similar are merged.
    merge_similarity: float = 0.9
    llm_concurrency: int = 4

    @classmethod
    def from_settings(cls, settings: ExtractionSettings) -> ExtractorResource:
        return cls(
            provider=settings.provider,
            merge_similarity=settings.merge_similarity,
            **cls.endpoint_fields(settings.llm),
        )

    def get_extractor(self) -> Extractor:
        if self.provider == "spacy":
            return SpacyExtractor()
        if self.provider == "rules":
            return RuleExtractor()
        return LLMExtractor(self.chat_client(), concurrency=self.llm_concurrency)
