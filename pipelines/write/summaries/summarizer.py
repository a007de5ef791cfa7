"""Summaries for communities, profiles and RAPTOR nodes; assets take `summarizer: SummarizerResource`.

`extractive` (default) picks the sentences nearest the cluster's centroid within the character
budget; `llm` asks an OpenAI-compatible chat model to write one from those sentences (a larger
extractive selection is the prompt, so a cluster of any size makes a bounded request).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol


from pipelines.config import SummarySettings
from pipelines.resources.llm import ChatClient, ChatEndpointResource
from pipelines.write.summaries.summaries import extractive_summary, truncate

# How much more source text than summary the LLM is shown.
LLM_CONTEXT_FACTOR = 8


class Summarizer(Protocol):
    name: str
    max_chars: int
    # Whether a summary is its sources' own sentences, so the mean of their vectors can stand for it.
    quotes_sources: bool

    def summarize(self, texts: Sequence[str], topic: str = "") -> str:
        """At most max_chars characters about `texts`; `topic` names what they are about, if known."""
        ...


class ExtractiveSummarizer:
    name = "extractive"
    quotes_sources = True

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    def summarize(self, texts: Sequence[str], topic: str = "") -> str:
        return extractive_summary(texts, self.max_chars)


class LLMSummarizer:
    name = "llm"
    quotes_sources = False

    def __init__(self, client: ChatClient, max_chars: int) -> None:
        self.client = client
        self.max_chars = max_chars

    def summarize(self, texts: Sequence[str], topic: str = "") -> str:
        source = extractive_summary(texts, self.max_chars * LLM_CONTEXT_FACTOR)
        if not source:
            return ""
        about = f" about {topic}" if topic else ""
        system = (
            f"Summarize the passages{about} in plain prose of at most {self.max_chars} characters. "
            "Use only facts stated in the passages; keep names, dates and codes exactly as written."
        )
        return truncate(self.client.complete(system, source).strip(), self.max_chars)


class SummarizerResource(ChatEndpointResource):
    provider: Literal["extractive", "llm"] = "extractive"
    max_chars: int = 600

    @classmethod
    def from_settings(cls, settings: SummarySettings) -> SummarizerResource:
        return cls(provider=settings.provider, max_chars=settings.max_chars, **cls.endpoint_fields(settings.llm))

    def get_summarizer(self) -> Summarizer:
        if self.provider == "extractive":
            return ExtractiveSummarizer(self.max_chars)
        return LLMSummarizer(self.chat_client(), self.max_chars)
