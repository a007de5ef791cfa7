"""Answer coverage: a gold answer, as whole normalized words, in the evidence packed into the budget."""

from __future__ import annotations

from pipelines.evaluation.answers import ANSWER_METRIC, answer_found, answer_scores, normalize_answer, scored_questions
from pipelines.evaluation.dataset import Question
from pipelines.evaluation.report import ArmOutcome, build_report, text_table


def question(identifier: str, *answers: str) -> Question:
    return Question(id=identifier, text="?", gold_ids=("p",), answers=answers)


def test_answers_compare_as_squad_normalizes_them() -> None:
    assert normalize_answer("The  Academy of Fine-Arts, Corvessa!") == "academy of finearts corvessa"
    assert answer_found(["harrowgate"], "Caldmoor Shipping is headquartered in the port city of Harrowgate.")
    assert answer_found(["academy of fine arts"], "He trained at the Academy of Fine Arts.")


def test_an_answer_counts_only_as_whole_words() -> None:
    assert not answer_found(["sable"], "The Sablewood club trains on the Lint.")
    assert not answer_found(["1931"], "Founded in 19312 by nobody.")


def test_yes_no_and_empty_answers_are_not_scored() -> None:
    questions = [question("q-yes", "Yes"), question("q-none"), question("q-city", "no", "Elbury")]
    assert [q.id for q in scored_questions(questions)] == ["q-city"]
    assert answer_scores(questions, {"q-yes": "yes", "q-city": "The city of Elbury."}).tolist() == [1.0]


def test_report_adds_answer_coverage_with_its_paired_test_when_the_dataset_has_answers() -> None:
    questions = [question(f"q{i}", f"answer{i}") for i in range(8)] + [question("q-yes", "yes")]
    rankings = {q.id: ["p"] for q in questions}
    dense = ArmOutcome("dense", rankings, [1.0], {f"q{i}": "nothing" for i in range(8)})
    find = ArmOutcome("find", rankings, [1.0], {f"q{i}": f"it is answer{i}" for i in range(8)})
    report = build_report("toy", "dev", questions, [dense, find], [5])
    assert report["answer_questions"] == 8
    assert report["arms"]["dense"][ANSWER_METRIC] == 0.0 and report["arms"]["find"][ANSWER_METRIC] == 1.0
    assert report["significance"]["arms"]["find"][ANSWER_METRIC]["difference"] == 1.0
    assert "Ans@budget" in text_table(report).splitlines()[1]
    without_answers = build_report("toy", "dev", [question("q")], [dense], [5])
    assert ANSWER_METRIC not in without_answers["arms"]["dense"] and "answer_questions" not in without_answers
