"""The dialogue reader on planted turns: participants behind pronouns, concepts that meet, dated facts,
and nothing from greetings, thanks or a speaker's prefix. No database: the reader is pure."""

from __future__ import annotations

from datetime import date

import pytest

from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText
from pipelines.write.extraction.grounding import relative_day
from pipelines.write.extraction.spacy_extractor import SpacyExtractor

SESSION_DAY = date(2023, 5, 8)


def turn(text: str, speaker: str = "Melanie", addressee: str = "Caroline") -> ChunkText:
    return ChunkText(text, text, speaker=speaker, addressee=addressee, observed_at=SESSION_DAY)


def read(*turns: ChunkText) -> list[ChunkExtraction]:
    return SpacyExtractor(workers=1).extract(list(turns))


def test_greetings_thanks_and_backchannels_make_no_entity_and_no_fact() -> None:
    social = [
        turn("Caroline: Hey Mel! Good to see you! How have you been?", "Caroline", "Melanie"),
        turn("Melanie: Thanks, Caroline!"),
        turn("James: Cool", "James", "John"),
        turn("John: Alright Sam, talk to you soon!", "John", "Sam"),
        turn("Audrey: Thanks! Wow, that's cool.", "Audrey", "Andrew"),
        turn("Andrew: Bye! Take care.", "Andrew", "Audrey"),
        turn("Great, thanks! Talk soon.", "Lucia Ferraro", "Saoirse Dunne"),
    ]
    for extraction in read(*social):
        assert (extraction.mentions, extraction.facts) == ([], [])


def test_a_speaker_prefix_is_never_part_of_a_name() -> None:
    [extraction] = read(turn("Melanie: Caroline went to the park with Oscar yesterday."))
    names = {m.name for m in extraction.mentions}
    assert not any(":" in name or name.startswith("Melanie ") for name in names)
    assert {"Caroline", "Oscar", "park"} <= names
    # A capitalised name the tagger calls a plural noun keeps its letters.
    [leeds] = read(turn("Saoirse Dunne: How was your week in Leeds?", "Saoirse Dunne", "Lucia Ferraro"))
    assert "leeds" in {m.normalized_name for m in leeds.mentions}


def test_i_is_the_speaker_and_relative_days_count_from_the_session() -> None:
    [extraction] = read(turn("Melanie: I just signed up for a pottery class yesterday."))
    [fact] = [f for f in extraction.facts if f.object is not None and f.object.name == "pottery"]
    assert (fact.subject.name, fact.subject.kind, fact.predicate) == ("Melanie", "person", "sign_up_for")
    assert fact.valid_from == date(2023, 5, 7)
    assert fact.statement == "I just signed up for a pottery class yesterday."


def test_you_is_the_addressee_of_a_two_person_conversation() -> None:
    [extraction] = read(turn("Caroline: You painted that lake sunrise last year!", "Caroline", "Melanie"))
    [fact] = [f for f in extraction.facts if f.predicate == "paint"]
    assert (fact.subject.name, fact.object and fact.object.name) == ("Melanie", "lake sunrise")
    assert fact.valid_from == date(2022, 1, 1)
    # Without a known addressee, "you" means no one.
    [unknown] = read(turn("Caroline: You painted that lake sunrise last year!", "Caroline", ""))
    assert not [f for f in unknown.facts if f.predicate == "paint"]


def test_a_pottery_class_pottery_classes_and_pottery_meet() -> None:
    extractions = read(
        turn("Melanie: I signed up for a pottery class."),
        turn("Melanie: My pottery classes start next month."),
        turn("Melanie: I love pottery."),
        turn("Melanie: I signed up for an evening pottery class."),
    )
    for extraction in extractions:
        assert ("concept", "pottery") in {(m.kind, m.normalized_name) for m in extraction.mentions}


def test_a_capitalised_word_opening_a_sentence_is_not_a_person_by_that_alone() -> None:
    [extraction] = read(turn("Melanie: Fireworks were amazing last night. We watched them from the beach."))
    assert not [m for m in extraction.mentions if m.kind == "person" and m.name != "Melanie"]
    assert "Fireworks" not in {m.name for m in extraction.mentions}


def test_a_dish_is_not_a_person_and_questions_state_no_fact() -> None:
    [dish, question] = read(
        turn("Melanie: We made Chicken Pot Pie for dinner."),
        turn("Caroline: Did you go camping with the kids?", "Caroline", "Melanie"),
    )
    assert ("concept", "chicken pot pie") in {(m.kind, m.normalized_name) for m in dish.mentions}
    assert ("Melanie", "make", "chicken pot pie") in {(f.subject.name, f.predicate, f.object and f.object.name) for f in dish.facts}
    assert question.facts == [] and "camping" in {m.name for m in question.mentions}


@pytest.mark.parametrize(
    ("words", "day"),
    [
        ("I went yesterday", date(2023, 5, 7)),
        ("two days ago", date(2023, 5, 6)),
        ("last Friday", date(2023, 5, 5)),
        ("Last Fri I finally went", date(2023, 5, 5)),
        ("last Monday", date(2023, 5, 1)),  # said on a Monday: the one before
        ("last week", date(2023, 5, 1)),
        ("next month", date(2023, 6, 1)),
        ("last year", date(2022, 1, 1)),
        ("a few weeks ago", date(2023, 4, 17)),
        ("this week", SESSION_DAY),
        ("I painted it in 2022", date(2022, 1, 1)),
        ("no time at all", None),
    ],
)
def test_relative_days_resolve_against_the_day_they_were_said(words: str, day: date | None) -> None:
    assert relative_day(words, SESSION_DAY) == day


def test_worker_processes_read_turns_and_pages_as_one_process_does() -> None:
    chunks = [
        turn("Melanie: I took my kids to the museum last Friday."),
        ChunkText("page#0", "Green is the second album by Steve Hillage. It was released in 1978.", title_name="Green"),
        turn("Caroline: Your kids must have loved the dinosaurs!", "Caroline", "Melanie"),
        turn("Melanie: Thanks, Caroline!"),
        ChunkText("page#1", "Steve Hillage played guitar in Gong.", title_name="Steve Hillage"),
    ]
    assert SpacyExtractor(workers=2, chunks_per_task=1).extract(chunks) == read(*chunks)


def test_she_is_the_one_other_person_the_turn_has_named() -> None:
    [named, described] = read(
        turn("Maria: I got a puppy two weeks ago! Her name is Coco. She loves the beach.", "Maria", "John"),
        turn("Maria: Coco met a girl at the park and her mom said hi.", "Maria", "John"),
    )
    facts = {(f.subject.name, f.predicate, f.object and f.object.name, f.valid_from) for f in named.facts}
    assert ("Maria", "get", "puppy", date(2023, 4, 24)) in facts
    assert ("Coco", "love", "beach", SESSION_DAY) in facts
    # "her" follows a girl nobody named: it may be hers, so it is no one's.
    assert not [f for f in described.facts if f.predicate == "have" and f.subject.name == "Coco"]


def test_plans_and_wishes_say_so_in_their_predicate() -> None:
    extractions = read(
        turn("Melanie: I'm gonna start a pottery class next month."),
        turn("Melanie: I want to learn piano."),
        turn("Melanie: I went camping last weekend."),
        turn("Melanie: I think you'd love this fantasy novel."),
    )
    facts = {(f.predicate, f.object and f.object.name, f.valid_from) for e in extractions for f in e.facts}
    assert {
        ("will_start", "pottery", date(2023, 6, 1)),
        ("want_to_learn", "piano", SESSION_DAY),
        ("go", "camping", date(2023, 5, 6)),
        ("would_love", "fantasy novel", SESSION_DAY),
    } <= facts
