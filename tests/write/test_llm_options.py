"""The LLM options of the extractor and the summarizer, against a stub of the remote chat service."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date

import pytest

from pipelines.errors import ConfigError
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.resources.llm import LLMError
from pipelines.write.summaries.summarizer import SummarizerResource
from pipelines.write.extraction.extraction_model import ChunkText
from tests.http_stub import StubServer
from tests.write.chat_stub import chat_reply

KEY_ENV = "LANEGRAPH_TEST_CHAT_KEY"
CHUNK = ChunkText(
    "doc#0",
    "# Project Heron\n\n## Leadership\n\nTomasz Wielgus leads Project Heron since 2025-04-01. "
    "Project Heron is built in Porto.",
)
ANSWER = {
    "entities": [
        {"name": "Tomasz Wielgus", "kind": "person"},
        {"name": "Project Heron", "kind": "person"},  # the name's form makes it a project anyway
        {"name": "Porto", "kind": "place"},
        {"name": "Mars", "kind": "planet"},  # not one of our kinds: dropped
    ],
    "facts": [
        {"subject": "Tomasz Wielgus", "predicate": "Lead", "object": "Project Heron", "object_value": None,
         "statement": "Tomasz Wielgus leads Project Heron  since 2025-04-01.", "valid_from": None, "valid_to": None},
        {"subject": "Project Heron", "predicate": "status", "object": None, "object_value": "active",
         "statement": "Project Heron is active.", "valid_from": None, "valid_to": None},  # not in the chunk
        {"subject": "Project Heron", "predicate": "built_in", "object": "Porto", "object_value": None,
         "statement": "Project Heron is built in Porto.", "valid_from": "2024-06-10", "valid_to": "not a date"},
    ],
}


@pytest.fixture
def chat_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, "secret-test-key")
    return "secret-test-key"


@pytest.fixture
def extraction_server() -> Iterator[StubServer]:
    server = StubServer(lambda body: chat_reply(json.dumps(ANSWER)))
    yield server
    server.close()


def test_llm_extractor_sends_a_json_schema_request_and_keeps_only_grounded_facts(
    extraction_server: StubServer, chat_key: str
) -> None:
    resource = ExtractorResource(
        provider="llm", llm_base_url=extraction_server.base_url, llm_model="stub-model", llm_api_key_env=KEY_ENV
    )
    [extraction] = resource.get_extractor().extract([CHUNK])

    [request] = extraction_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {chat_key}"
    assert request["body"]["model"] == "stub-model"
    response_format = request["body"]["response_format"]
    assert response_format["type"] == "json_schema"
    kinds = response_format["json_schema"]["schema"]["properties"]["entities"]["items"]["properties"]["kind"]["enum"]
    assert "project" in kinds and "planet" not in kinds
    assert request["body"]["messages"][1]["content"] == CHUNK.text

    assert {(m.name, m.kind) for m in extraction.mentions} == {
        ("Tomasz Wielgus", "person"), ("Project Heron", "project"), ("Porto", "place")
    }
    facts = {(f.subject.name, f.predicate, f.object.name if f.object else f.object_value): f for f in extraction.facts}
    assert set(facts) == {("Tomasz Wielgus", "lead", "Project Heron"), ("Project Heron", "built_in", "Porto")}
    leads = facts[("Tomasz Wielgus", "lead", "Project Heron")]
    # Grounded to the chunk's own sentence; the date the model left out comes from the sentence.
    assert leads.statement == "Tomasz Wielgus leads Project Heron since 2025-04-01."
    assert leads.valid_from == date(2025, 4, 1)
    built = facts[("Project Heron", "built_in", "Porto")]
    assert built.valid_from == date(2024, 6, 10) and built.valid_to is None


def test_llm_extractor_reports_an_endpoint_failure_in_one_line(chat_key: str) -> None:
    server = StubServer(lambda body: (401, {"error": {"message": "bad key"}}))
    try:
        extractor = ExtractorResource(
            provider="llm", llm_base_url=server.base_url, llm_model="stub-model", llm_api_key_env=KEY_ENV
        ).get_extractor()
        with pytest.raises(LLMError, match=r"failed after 1 attempt\(s\).*HTTP 401") as raised:
            extractor.extract([CHUNK])
        assert "\n" not in str(raised.value)
    finally:
        server.close()


def test_llm_extractor_rejects_an_answer_that_is_not_json(chat_key: str) -> None:
    server = StubServer(lambda body: chat_reply("Sure! Here are the entities: ..."))
    try:
        extractor = ExtractorResource(
            provider="llm", llm_base_url=server.base_url, llm_model="stub-model", llm_api_key_env=KEY_ENV
        ).get_extractor()
        with pytest.raises(LLMError, match="invalid JSON"):
            extractor.extract([CHUNK])
    finally:
        server.close()


def test_llm_key_comes_only_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    resource = SummarizerResource(provider="llm", llm_base_url="http://127.0.0.1:9/v1", llm_model="m", llm_api_key_env=KEY_ENV)
    with pytest.raises(ConfigError, match=KEY_ENV):
        resource.get_summarizer()


def test_llm_summarizer_writes_from_an_extractive_selection_within_budget(chat_key: str) -> None:
    long_answer = "Project Heron is a warehouse picking arm built in Porto. " * 20
    server = StubServer(lambda body: chat_reply(long_answer))
    try:
        summarizer = SummarizerResource(
            provider="llm", max_chars=120, llm_base_url=server.base_url, llm_model="stub-model", llm_api_key_env=KEY_ENV
        ).get_summarizer()
        summary = summarizer.summarize(
            ["Project Heron is a warehouse picking arm.", "Project Heron is built in Porto."], topic="Project Heron"
        )
    finally:
        server.close()
    assert len(summary) <= 120 and summary.endswith("…")
    [request] = server.requests
    assert "response_format" not in request["body"]
    assert "about Project Heron" in request["body"]["messages"][0]["content"]
    assert "Project Heron is built in Porto." in request["body"]["messages"][1]["content"]
