"""The offline extractors on planted sentences: typed entities, grounded facts, validity, states."""

from __future__ import annotations

from datetime import date

import pytest

from pipelines.write.extraction.extraction_model import ChunkText, ExtractedFact
from pipelines.write.extraction.grounding import sentence_validity
from pipelines.write.extraction.rule_extractor import RuleExtractor
from pipelines.write.extraction.spacy_extractor import SpacyExtractor
from pipelines.write.summaries.summaries import extractive_summary

PLANTED = ChunkText(
    "planted#0",
    "# Project Heron\n\n"
    "## Leadership\n\n"
    "Maren Okafor led Project Heron from 2023-06-01 until 2025-03-31. "
    "Tomasz Wielgus leads Project Heron since 2025-04-01. Project Lantern was paused on 2025-03-14. "
    "Saoirse Dunne is the mentor of Lucia Ferraro. Kelpstone Photonics is based in Eindhoven. "
    "Fault code HX-4417 means wrist gimbal torque drift. The Porto assembly plant builds Project Heron. "
    "Vantory Optics is no longer a supplier.\n",
)


def triples(facts: list[ExtractedFact]) -> dict[tuple[str, str, str], ExtractedFact]:
    return {(f.subject.name, f.predicate, f.object.name if f.object else f.object_value): f for f in facts}


@pytest.fixture(scope="module")
def spacy_extraction():
    [extraction] = SpacyExtractor().extract([PLANTED])
    return extraction


def test_spacy_types_entities_with_rules_where_the_small_model_is_weak(spacy_extraction) -> None:
    kinds = {m.name: m.kind for m in spacy_extraction.mentions}
    assert kinds["Project Heron"] == "project"
    assert kinds["Project Lantern"] == "project"
    assert kinds["HX-4417"] == "code"
    assert kinds["Porto assembly plant"] == "place"
    assert kinds["Tomasz Wielgus"] == "person"
    assert kinds["Eindhoven"] == "place"


def test_spacy_facts_are_grounded_dated_and_typed(spacy_extraction) -> None:
    facts = triples(spacy_extraction.facts)
    for fact in spacy_extraction.facts:
        assert fact.statement in PLANTED.text and fact.statement.endswith(".")
    led = facts[("Maren Okafor", "lead", "Project Heron")]
    assert (led.valid_from, led.valid_to) == (date(2023, 6, 1), date(2025, 3, 31))
    assert facts[("Tomasz Wielgus", "lead", "Project Heron")].valid_from == date(2025, 4, 1)
    paused = facts[("Project Lantern", "status", "paused")]
    assert paused.object is None and paused.valid_from == date(2025, 3, 14)
    assert ("Saoirse Dunne", "mentor_of", "Lucia Ferraro") in facts
    assert ("Kelpstone Photonics", "based_in", "Eindhoven") in facts
    assert ("HX-4417", "mean", "wrist gimbal torque drift") in facts
    assert ("Porto assembly plant", "build", "Project Heron") in facts
    # A negated clause states nothing.
    assert not any(subject == "Vantory Optics" for subject, _, _ in facts)


def test_spacy_is_deterministic() -> None:
    first = SpacyExtractor().extract([PLANTED])[0]
    second = SpacyExtractor().extract([PLANTED])[0]
    assert first == second


def test_rules_fallback_finds_the_plain_patterns_without_a_model() -> None:
    [extraction] = RuleExtractor().extract([PLANTED])
    facts = triples(extraction.facts)
    assert {m.name: m.kind for m in extraction.mentions}["Project Heron"] == "project"
    assert facts[("Tomasz Wielgus", "lead", "Project Heron")].valid_from == date(2025, 4, 1)
    assert ("Saoirse Dunne", "mentor_of", "Lucia Ferraro") in facts
    assert ("Kelpstone Photonics", "based_in", "Eindhoven") in facts
    assert facts[("Project Lantern", "status", "paused")].valid_from == date(2025, 3, 14)
    for fact in extraction.facts:
        assert fact.statement in PLANTED.text


@pytest.mark.parametrize(
    ("sentence", "start", "end"),
    [
        ("As of 2024-12-01, Maren Okafor leads Project Heron.", date(2024, 12, 1), None),
        ("Vantory Optics supplied lidar from 2022-11-01 until 2025-02-10.", date(2022, 11, 1), date(2025, 2, 10)),
        ("The review ran between 2025-02-17 and 2025-03-12.", date(2025, 2, 17), date(2025, 3, 12)),
        ("On 2025-03-18 it was decided that Tomasz would lead from 2025-04-01.", date(2025, 4, 1), None),
        ("Project Lantern was paused on 2025-03-14.", date(2025, 3, 14), None),
        ("Brassleaf Motors has supplied parts since 2021.", None, None),
        ("Rui Caldeira led Project Tessel until 2025-03-31.", None, date(2025, 3, 31)),
    ],
)
def test_sentence_validity_reads_only_clear_iso_dates(sentence: str, start: date | None, end: date | None) -> None:
    validity = sentence_validity(sentence)
    assert (validity.valid_from, validity.valid_to) == (start, end)


def test_extractive_summary_keeps_central_sentences_without_repeats_within_budget() -> None:
    texts = [
        "Project Heron is a warehouse picking arm built in Porto.",
        "Project Heron is a warehouse picking arm that is built in Porto.",
        "Tomasz Wielgus leads Project Heron.",
        "The canteen serves soup on Fridays.",
        "Project Heron uses the VK-22 wrist gimbal.",
    ]
    summary = extractive_summary(texts, max_chars=100)
    assert len(summary) <= 100
    assert "Project Heron" in summary
    assert not ("picking arm built" in summary and "picking arm that is built" in summary)
    assert "canteen" not in summary
    assert extractive_summary(texts, max_chars=100) == summary
