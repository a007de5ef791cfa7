"""Fuzzing what a user hands Lanegraph: JSONL records, lanes.yaml values, datasets and questions.

Whatever a record holds (any code point including lone surrogates, deep nesting, wrong types,
scopes of every shape, unknown fields, raw garbage), reading it never raises: each line becomes a
document or one one-line reason naming file and line. Written to a real database, a fuzzed file
leaves consistent BM25 statistics and only scopes a caller can present. Whatever a lane or setting
of lanes.yaml says, `lanegraph check --offline` ends in a report or one error line, never a
traceback. A dataset file of any shape, encoding or depth loads or is refused in one line naming it; any
question is refused in one line or split into terms, and `find` and `explain` answer a smaller sample
of them on a real database. Together over 1,000 inputs by default. The summary lines count what was fuzzed (LANEGRAPH_FUZZ_EXAMPLES scales every test).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import REPOSITORY
from pipelines.errors import InputError
from pipelines.evaluation.dataset import load_dataset
from pipelines.read.find import checked_question
from pipelines.read.question import question_terms
from pipelines.resources.database import Database
from pipelines.resources.scopes import normalize_row_scopes
from pipelines.write.documents.bm25 import statistics_consistent, statistics_health
from pipelines.write.documents.chunks import materialize_chunks
from pipelines.write.documents.documents import materialize_documents
from pipelines.write.documents.registry import register_path
from pipelines.write.documents.sources import SourceFile, read_source
from tests.reliability.test_bad_input import assert_one_line, run_cli

SCALE = float(os.environ.get("LANEGRAPH_FUZZ_EXAMPLES", "1"))
FUZZED: Counter[str] = Counter()
MAX_BYTES = 4000

# Any code point, lone surrogates and control characters included.
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40)
SCOPE = st.one_of(
    st.sampled_from(["acme", "team-a", "legal", " alpha", "alpha\n", "", "a" * 201, "x\x1b[31m"]), ANY_TEXT, st.integers()
)
SCOPES = st.one_of(
    st.none(), ANY_TEXT, st.lists(SCOPE, max_size=6),
    st.builds(lambda n: [f"tenant-{i}" for i in range(n)], st.integers(0, 1200)),
)
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), ANY_TEXT),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)
RECORD = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(ANY_TEXT, JSON_VALUE),
        "title": st.one_of(ANY_TEXT, JSON_VALUE),
        "text": st.one_of(st.text(min_size=1, max_size=300), ANY_TEXT, JSON_VALUE),
        "uri": ANY_TEXT,
        "observed_at": st.one_of(ANY_TEXT, st.just("2025-03-01T10:00:00+01:00"), st.just("2025-13-45")),
        "expires_at": st.one_of(ANY_TEXT, st.datetimes().map(lambda moment: moment.isoformat())),
        "scopes": SCOPES,
        "extra": JSON_VALUE,
    },
)
# Records that should land, so the write test also stores, replaces and indexes documents.
USABLE_RECORD = st.fixed_dictionaries(
    {"id": st.one_of(st.sampled_from([f"doc-{i}" for i in range(12)]), st.uuids().map(str)), "text": st.text(min_size=1, max_size=400).filter(str.strip)},
    optional={"scopes": st.lists(st.sampled_from(["acme", "borealis", "legal", "team-a"]), max_size=3),
              "title": st.text(max_size=30)},
)
LINE = st.one_of(
    USABLE_RECORD.map(json.dumps),
    USABLE_RECORD.map(json.dumps),
    RECORD.map(json.dumps),
    RECORD.map(lambda record: json.dumps(record, ensure_ascii=False)),
    st.integers(1, 6000).map(lambda depth: '{"text": "x", "title": ' + "[" * depth + "]" * depth + "}"),
    st.builds(lambda text: json.dumps({"text": text}), st.text(min_size=MAX_BYTES, max_size=MAX_BYTES + 10)),
    ANY_TEXT.filter(lambda text: "\n" not in text and "\r" not in text),
)
LINES = st.lists(LINE, min_size=1, max_size=8)


def jsonl_file(folder: Path, name: str, lines: list[str]) -> Path | None:
    """The lines as a UTF-8 file, or None when a line cannot be written as UTF-8 at all."""
    try:
        data = "\n".join(lines).encode("utf-8")
    except UnicodeEncodeError:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data + b"\n")
    return path


@settings(max_examples=int(300 * SCALE), deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=LINES)
def test_reading_any_jsonl_never_raises_and_accounts_for_every_line(tmp_path_factory, lines: list[str]) -> None:
    path = jsonl_file(tmp_path_factory.mktemp("read"), "fuzzed.jsonl", lines)
    if path is None:
        return
    read = read_source(SourceFile("fuzz/fuzzed.jsonl", path, "jsonl"), max_bytes=MAX_BYTES)
    FUZZED["records read"] += sum(1 for line in path.read_text().split("\n") if line.strip())
    if read.unreadable:
        assert len(read.problems) == 1
        return
    for problem in read.problems:
        assert problem.location.startswith(f"{path}:"), problem
        assert_one_line(str(problem))
    assert len(read.documents) + len(read.problems) == sum(1 for line in path.read_text().split("\n") if line.strip())
    for document in read.documents:
        assert normalize_row_scopes(list(document.scopes)) == document.scopes
        document.body.encode("utf-8")


@pytest.fixture(scope="module")
def fuzzed_database(make_database) -> Database:
    return make_database()


@settings(max_examples=int(25 * SCALE), deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=LINES)
def test_writing_any_jsonl_leaves_a_consistent_database(
    fuzzed_database: Database, tmp_path_factory, lines: list[str]
) -> None:
    path = jsonl_file(tmp_path_factory.mktemp("write"), "fuzzed.jsonl", lines)
    if path is None:
        return
    with fuzzed_database.connection() as connection:
        keys = register_path(connection, path, 10_000_000).keys
    documents = materialize_documents(fuzzed_database, keys, max_bytes=MAX_BYTES, batch_size=4)
    chunks = materialize_chunks(fuzzed_database, keys, max_tokens=60, overlap_tokens=10, batch_size=4)
    FUZZED["records written"] += sum(1 for line in lines if line.strip())
    FUZZED["documents stored"] += documents.inserted + documents.updated
    for problem in documents.problems + chunks.problems:
        assert_one_line(str(problem))
    with fuzzed_database.connection() as connection:
        health = statistics_health(connection)
        stored_scopes = [scopes for (scopes,) in connection.execute("SELECT DISTINCT scopes FROM document")]
    assert statistics_consistent(health), health
    for scopes in stored_scopes:
        assert list(normalize_row_scopes(scopes)) == scopes


LANES = yaml.safe_load((REPOSITORY / "lanes.yaml").read_text())
YAML_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=400),
    st.sampled_from(["'", '"', "k * (", "k +", "((((k))))", "k * fact_candidate_factor", "sources", "../../etc/passwd",
                     "/dev/zero", "facts", "t" * 300, "(" * 2000 + "k" + ")" * 2000, "a\x00b"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
LANE_FIELD = st.sampled_from(["kind", "template", "limit", "settings"])


@settings(max_examples=int(150 * SCALE), deadline=None, suppress_health_check=list(HealthCheck))
@given(lane=st.sampled_from(sorted(LANES["lanes"])), field=LANE_FIELD, value=YAML_VALUE,
       setting=st.sampled_from(sorted(LANES["settings"])), setting_value=YAML_VALUE, where=st.integers(0, 2))
def test_check_answers_any_lane_or_setting_with_a_report_or_one_line(
    tmp_path_factory, capsys: pytest.CaptureFixture[str], lane: str, field: str, value: object,
    setting: str, setting_value: object, where: int,
) -> None:
    config = json.loads(json.dumps(LANES))
    if where in (0, 2):
        config["lanes"][lane][field] = value
    if where in (1, 2):
        config["settings"][setting] = setting_value
    path = tmp_path_factory.mktemp("lanes") / "lanes.yaml"
    try:
        path.write_text(yaml.safe_dump(config, allow_unicode=True))
    except UnicodeEncodeError:
        return
    status, _, stderr = run_cli(capsys, "check", "--offline", "--lanes", str(path))
    FUZZED["lanes.yaml values checked"] += 1
    assert status in (0, 1, 2), (status, stderr)
    if status == 2:
        assert_one_line(stderr.strip())
        # The file, or the field or lane (a lane's parts are checked after loading, by lane and key).
        assert any(where in stderr for where in (str(path), "lanes.", "settings.", "lane ")), stderr
        FUZZED["lanes.yaml values refused in one line"] += 1


DATASET_TEXT = st.one_of(ANY_TEXT, st.sampled_from(["", "Where?", "x\x00y", "\ud800", "q" * 5000]))
PASSAGE = st.fixed_dictionaries(
    {"id": st.one_of(st.sampled_from(["p1", "p2", "p3"]), ANY_TEXT), "title": DATASET_TEXT, "text": DATASET_TEXT},
    optional={"extra": JSON_VALUE},
)
QUESTION = st.fixed_dictionaries(
    {"id": ANY_TEXT, "text": DATASET_TEXT, "gold_ids": st.lists(st.sampled_from(["p1", "p2", "p9"]), max_size=3)},
    optional={"answers": st.lists(DATASET_TEXT, max_size=2), "meta": st.one_of(JSON_VALUE, st.just({"split": "train"}))},
)
DATASET = st.one_of(
    st.fixed_dictionaries({"name": DATASET_TEXT, "corpus": st.lists(PASSAGE, max_size=4), "queries": st.lists(QUESTION, max_size=3)}),
    JSON_VALUE,
)


@settings(max_examples=int(300 * SCALE), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=DATASET, encoding=st.sampled_from(["utf-8", "utf-16", "latin-1"]), nesting=st.integers(0, 3000))
def test_any_dataset_file_loads_or_is_refused_in_one_line_naming_it(
    tmp_path_factory, data: object, encoding: str, nesting: int
) -> None:
    path = tmp_path_factory.mktemp("dataset") / "dataset.json"
    text = json.dumps(data, ensure_ascii=False)
    if nesting > 2000:
        text = '{"name": ' + "[" * nesting + "]" * nesting + "}"
    try:
        path.write_bytes(text.encode(encoding, errors="surrogatepass"))
    except UnicodeEncodeError:
        return
    FUZZED["datasets loaded"] += 1
    try:
        dataset = load_dataset(path)
    except InputError as error:
        assert_one_line(str(error), str(path))
        FUZZED["datasets refused in one line"] += 1
        return
    for text_value in [question.text for question in dataset.questions] + [passage.text for passage in dataset.passages]:
        text_value.encode("utf-8")
        assert "\x00" not in text_value


QUESTION_TEXT = st.one_of(
    ANY_TEXT, st.text(max_size=300), st.sampled_from(["", " ", "Heron\x00", "Heron \udcff", "x" * 4001, "\u2028\x1b[2J"])
)


@settings(max_examples=int(300 * SCALE), deadline=None, suppress_health_check=list(HealthCheck))
@given(question=QUESTION_TEXT)
def test_any_question_is_checked_and_split_into_terms_or_refused_in_one_line(question: str) -> None:
    FUZZED["questions checked"] += 1
    try:
        checked = checked_question(question)
    except InputError as error:
        assert_one_line(str(error), "question")
        return
    for term in question_terms(checked):
        term.encode("utf-8")


@pytest.fixture(scope="module")
def find_database(make_schema_url) -> Iterator[str]:
    url = make_schema_url()
    with Database(url) as database, database.connection() as connection:
        connection.execute("INSERT INTO document (id, title, body, content_hash) VALUES ('d', 'Heron', 'Heron flies.', 'h')")
    yield url


@settings(max_examples=int(15 * SCALE), deadline=None, suppress_health_check=list(HealthCheck))
@given(question=QUESTION_TEXT, command=st.sampled_from(["find", "explain"]))
def test_find_and_explain_answer_any_question_or_refuse_it_in_one_line(
    find_database: str, capsys: pytest.CaptureFixture[str], question: str, command: str
) -> None:
    FUZZED["questions asked of the database"] += 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", find_database)
        status, _, stderr = run_cli(capsys, command, question, *(["--trace"] if command == "find" else []))
    assert status in (0, 2), stderr
    if status == 2:
        assert_one_line(stderr.strip())


def test_report_what_was_fuzzed() -> None:
    """Runs after the fuzz tests in this file (pytest keeps file order) and prints their totals."""
    print("fuzzed: " + ", ".join(f"{count} {what}" for what, count in FUZZED.items()))
