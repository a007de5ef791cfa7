"""A question's terms: the runs of whole words that names and titles are looked up by."""

from __future__ import annotations

from pipelines.read.question import question_terms


def test_terms_are_runs_of_whole_lower_case_words_a_possessive_dropped():
    assert question_terms("Who led Hank Snow's band?") == [
        "who", "who led", "who led hank", "who led hank snow", "who led hank snow band",
        "led", "led hank", "led hank snow", "led hank snow band",
        "hank", "hank snow", "hank snow band", "snow", "snow band", "band",
    ]


def test_a_term_with_accents_comes_also_folded():
    terms = question_terms("Where does the Tekezé River flow?")
    assert terms.index("tekezé river") + 1 == terms.index("tekeze river")
    assert "tekeze" in terms and "the" in terms and len(terms) == len(set(terms))
