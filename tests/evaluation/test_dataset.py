"""Loading benchmark datasets: the shared format, splits, and one-line errors for bad files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from pipelines.config import load_config
from pipelines.evaluation.build import build_fingerprint, ensure_built, store_fingerprint, write_side
from pipelines.evaluation.dataset import (
    corpus_fingerprint,
    corpus_records,
    database_suffix,
    load_dataset,
)
from pipelines.errors import InputError


def dataset_file(tmp_path: Path, **overrides: object) -> Path:
    data = {
        "name": "toy",
        "corpus": [
            {"id": "p1", "title": "Alpha", "text": "Alpha text."},
            {"id": "p2", "title": "Alpha", "text": "Another passage titled Alpha."},
            {"id": "p3", "title": "Gamma", "text": "Gamma text."},
        ],
        "queries": [
            {"id": "q1", "text": "What about alpha?", "gold_ids": ["p1", "p2"], "meta": {"split": "dev-likely"}},
            {"id": "q2", "text": "And gamma?", "gold_ids": ["p3"], "meta": {"split": "train"}},
            {"id": "q3", "text": "No split at all?", "gold_ids": ["p3"]},
        ],
        **overrides,
    }
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(data))
    return path


def test_dev_is_every_question_not_marked_train(tmp_path: Path) -> None:
    dataset = load_dataset(dataset_file(tmp_path))
    assert [q.id for q in dataset.questions_in("dev")] == ["q1", "q3"]
    assert [q.id for q in dataset.questions_in("train")] == ["q2"]
    assert [q.id for q in dataset.questions_in("all")] == ["q1", "q2", "q3"]
    assert [q.id for q in dataset.questions_in("dev", limit=1)] == ["q1"]


def test_each_passage_becomes_one_document_keeping_its_id_and_title(tmp_path: Path) -> None:
    dataset = load_dataset(dataset_file(tmp_path))
    records = corpus_records(dataset.passages)
    assert [(r["id"], r["title"], r["text"]) for r in records] == [
        ("p1", "Alpha", "Alpha text."),
        ("p2", "Alpha", "Another passage titled Alpha."),
        ("p3", "Gamma", "Gamma text."),
    ]
    assert set(records[0]) == {"id", "title", "text", "uri", "observed_at", "expires_at", "scopes"}


def test_fingerprint_follows_corpus_and_write_settings(tmp_path: Path) -> None:
    passages = load_dataset(dataset_file(tmp_path)).passages
    assert corpus_fingerprint(passages, "a") == corpus_fingerprint(passages, "a")
    assert corpus_fingerprint(passages, "a") != corpus_fingerprint(passages, "b")
    assert corpus_fingerprint(passages, "a") != corpus_fingerprint(passages[:2], "a")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"corpus": [{"id": 7, "title": "t", "text": "x"}]}, "toy.json: corpus[0].id: Input should be a valid string"),
        (
            {"queries": [{"id": "q", "text": "?", "gold_ids": ["nope"]}]},
            "toy.json: queries[0].gold_ids: 'nope' is not a passage id in the corpus",
        ),
        (
            {"corpus": [{"id": "p", "title": "", "text": "a"}, {"id": "p", "title": "", "text": "b"}]},
            "toy.json: corpus[1].id: passage id 'p' appears twice",
        ),
        ({"queries": [{"id": "q", "text": "?"}]}, "toy.json: queries[0].gold_ids: Field required"),
    ],
)
def test_bad_files_are_refused_naming_the_field(tmp_path: Path, overrides: dict, message: str) -> None:
    with pytest.raises(InputError) as raised:
        load_dataset(dataset_file(tmp_path, **overrides))
    assert str(raised.value).endswith(message)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x",\n "corpus": [,]}')
    with pytest.raises(InputError, match=r"broken.json:2: invalid JSON"):
        load_dataset(path)


def test_database_suffix_is_a_plain_identifier() -> None:
    assert database_suffix("MuSiQue-Ans (dev)") == "musique_ans_dev"
    assert database_suffix("---") == "dataset"


def test_a_release_with_a_new_asset_needs_a_new_build():
    @dg.asset
    def chunks() -> None: ...

    @dg.asset
    def title_links() -> None: ...

    before = write_side(dg.Definitions(assets=[chunks]), "settings")
    assert before == write_side(dg.Definitions(assets=[chunks]), "settings")
    assert before != write_side(dg.Definitions(assets=[chunks, title_links]), "settings")
    assert before != write_side(dg.Definitions(assets=[chunks]), "other settings")


def test_a_database_given_with_this_builds_fingerprint_is_reused_not_refused(
    tmp_path: Path, make_schema_url: Callable[[], str]
) -> None:
    # The graph drift benchmark builds through the runner, records the build, then evaluates on it.
    @dg.asset
    def chunks() -> None: ...

    definitions = dg.Definitions(assets=[chunks])
    dataset = load_dataset(dataset_file(tmp_path))
    fingerprint = build_fingerprint(dataset, definitions, load_config().pipeline)
    url = make_schema_url()
    store_fingerprint(url, fingerprint)
    said: list[str] = []
    assert ensure_built(dataset, definitions, said.append, url) == url
    assert said == [f"reusing the toy build (3 passages, fingerprint {fingerprint[:12]})"]
