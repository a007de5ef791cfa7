"""Fuzzing the two files a user hands Lanegraph: JSONL records and lanes.yaml values.

Whatever a record holds (any code point including lone surrogates, deep nesting, wrong types,
scopes of every shape, unknown fields, raw garbage), reading it never raises: each line becomes a
document or one one-line reason naming file and line. Written to a real database, a fuzzed file
leaves consistent BM25 statistics and only scopes a caller can present. Whatever a lane or setting
of lanes.yaml says, `lanegraph check --offline` ends in a report or one error line, never a
traceback. The summary lines count what was fuzzed (LANEGRAPH_FUZZ_EXAMPLES scales every test).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import REPOSITORY
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


def test_report_what_was_fuzzed() -> None:
    """Runs after the fuzz tests in this file (pytest keeps file order) and prints their totals."""
    print("fuzzed: " + ", ".join(f"{count} {what}" for what, count in FUZZED.items()))
