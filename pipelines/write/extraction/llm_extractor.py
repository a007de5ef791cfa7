"""The LLM option: an OpenAI-compatible chat model fills a JSON schema of entities and facts per chunk.

The model's answer is checked, not trusted: kinds must be ours, a fact's endpoints must be entities
it listed, and its statement must be a sentence of the chunk (matched after whitespace
normalisation; anything else is dropped), so LLM facts are as grounded as the parser's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date

from pipelines.resources.llm import ChatClient
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText, ExtractedFact, Mention
from pipelines.write.extraction.grounding import chunk_sentences, sentence_validity
from pipelines.write.extraction.ontology import ENTITY_KINDS, kind_from_name, normalize_entity_name

SCHEMA_NAME = "knowledge_graph_extraction"
_NULLABLE_STRING = {"type": ["string", "null"]}


def extraction_schema() -> dict:
    entity = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "kind"],
        "properties": {"name": {"type": "string"}, "kind": {"type": "string", "enum": sorted(ENTITY_KINDS)}},
    }
    fact_fields = ["subject", "predicate", "object", "object_value", "statement", "valid_from", "valid_to"]
    fact = {
        "type": "object",
        "additionalProperties": False,
        "required": fact_fields,
        "properties": {
            "subject": {"type": "string"},
            "predicate": {"type": "string"},
            "object": _NULLABLE_STRING,
            "object_value": _NULLABLE_STRING,
            "statement": {"type": "string"},
            "valid_from": _NULLABLE_STRING,
            "valid_to": _NULLABLE_STRING,
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["entities", "facts"],
        "properties": {"entities": {"type": "array", "items": entity}, "facts": {"type": "array", "items": fact}},
    }


SYSTEM_PROMPT = (
    "You extract a knowledge graph from one passage. List the named entities with one kind each: "
    + "; ".join(f"{kind} ({description})" for kind, description in ENTITY_KINDS.items())
    + ". Then list facts as subject-predicate-object triples. subject and object are entity names "
    "exactly as listed in entities. predicate is a short lower-case snake_case verb phrase in the "
    "present tense (lead, depend_on, mentor_of, based_in, supply_lidar_for). A state such as "
    "'paused' or 'in production' is predicate 'status' with object null and object_value the state; "
    "any other literal object goes in object_value with object null. statement is the one sentence "
    "of the passage that states the fact, copied exactly. valid_from and valid_to are ISO dates "
    "(YYYY-MM-DD) when the sentence says when the fact starts or ends, else null."
)

_SPACE = re.compile(r"\s+")


def _squashed(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def _iso(value: object) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        return None


def _predicate(text: str) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", text.lower()))


def parse_extraction(chunk: ChunkText, answer: dict) -> ChunkExtraction:
    """Validate one model answer against the chunk; ungrounded or ill-formed items are dropped."""
    extraction = ChunkExtraction(chunk.id)
    by_name: dict[str, Mention] = {}
    for item in answer.get("entities") or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        kind = kind_from_name(item["name"].strip()) or item.get("kind")
        if kind not in ENTITY_KINDS:
            continue
        mention = Mention(item["name"], kind)
        if mention.name:
            by_name[mention.normalized_name] = mention
            extraction.mentions.append(mention)
    sentences = {_squashed(sentence): sentence for sentence in chunk_sentences(chunk.text)}
    for item in answer.get("facts") or []:
        fact = _fact(item, by_name, sentences)
        if fact is not None:
            extraction.facts.append(fact)
    return extraction


def _fact(item: object, by_name: dict[str, Mention], sentences: dict[str, str]) -> ExtractedFact | None:
    if not isinstance(item, dict):
        return None
    statement = sentences.get(_squashed(str(item.get("statement") or "")))
    subject = by_name.get(normalize_entity_name(str(item.get("subject") or "")))
    predicate = _predicate(str(item.get("predicate") or ""))
    if statement is None or subject is None or not predicate:
        return None
    target = by_name.get(normalize_entity_name(item["object"])) if isinstance(item.get("object"), str) else None
    value = item.get("object_value") if isinstance(item.get("object_value"), str) else None
    if target is None and not value:
        return None
    stated = sentence_validity(statement)
    object_value = value.strip() if target is None and value else None
    return ExtractedFact(
        subject=subject,
        predicate=predicate,
        statement=statement,
        object=target,
        object_value=object_value,
        valid_from=_iso(item.get("valid_from")) or stated.valid_from,
        valid_to=_iso(item.get("valid_to")) or stated.valid_to,
    )


class LLMExtractor:
    """One chat request per chunk, a few in flight at once."""

    name = "llm"

    def __init__(self, client: ChatClient, concurrency: int = 4) -> None:
        self.client = client
        self.concurrency = concurrency

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._extract_one, chunks))

    def _extract_one(self, chunk: ChunkText) -> ChunkExtraction:
        answer = self.client.complete_json(
            SYSTEM_PROMPT, chunk.text, schema_name=SCHEMA_NAME, schema=extraction_schema()
        )
        return parse_extraction(chunk, answer)
