"""One bad record never spoils its file, the index or a later run; `lanegraph check` never tracebacks.

A JSONL file mixes valid records with records that break something different each: a lone surrogate
(JSON's `\\ud800`), nesting too deep for the parser, scopes no caller could present, scopes too many
for an index key, a record over max_bytes. Each bad one is skipped with one line naming file and
line, the valid ones land, and the BM25 statistics stay consistent, so the next, unrelated ingest is
not blamed for them. A document whose chunks the database refuses leaves no chunk without postings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.resources.database import Database
from pipelines.resources.scopes import MAX_SCOPE_CHARS, MAX_SCOPES
from pipelines.write.documents.bm25 import statistics_consistent, statistics_health
from pipelines.write.documents.chunks import materialize_chunks
from pipelines.write.documents.documents import materialize_documents
from pipelines.write.documents.registry import register_path
from pipelines.write.documents.sources import SourceFile, read_source
from tests.reliability.test_bad_input import assert_one_line, replaced, run_cli

VALID = [
    {"id": "ok-1", "text": "Mara Okafor leads the Rotterdam yard lab.", "scopes": ["team-a"]},
    {"id": "ok-2", "text": "Batteries from lot 7 were recalled in March 2025."},
    {"id": "ok-3", "text": "The dock schedules slots weekly.", "scopes": ["legal", "team-b"]},
]
# (raw JSONL line, a fragment of its skip reason)
BAD_LINES = [
    ('{"id": "bad-surrogate", "text": "bad \\ud800"}', "lone surrogate"),
    ('{"id": "bad-deep", "text": "x", "title": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deeply"),
    (json.dumps({"id": "bad-space", "text": "x", "scopes": [" alpha"]}), "surrounding spaces"),
    (json.dumps({"id": "bad-newline", "text": "x", "scopes": ["alpha\n"]}), "surrounding spaces"),
    (json.dumps({"id": "bad-control", "text": "x", "scopes": ["al\x07pha"]}), "control characters"),
    (json.dumps({"id": "bad-long", "text": "x", "scopes": ["a" * (MAX_SCOPE_CHARS + 1)]}), "longer than"),
    (json.dumps({"id": "bad-many", "text": "x", "scopes": [f"s{i}" for i in range(MAX_SCOPES + 1)]}), "at most"),
    # Few enough for a caller, too many bytes for a btree key (bm25_term's primary key).
    (json.dumps({"id": "bad-wide", "text": "x", "scopes": [f"tenant-{i:04d}" for i in range(900)]}), "bytes"),
    (json.dumps({"id": "bad-type", "text": "x", "scopes": "alpha"}), "expected a list of scopes"),
    (json.dumps({"id": "bad-number", "text": "x", "scopes": [7]}), "not text"),
]


def mixed_file(folder: Path) -> Path:
    """Valid records interleaved with bad ones; returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for index, (bad, _) in enumerate(BAD_LINES):
        if index < len(VALID):
            lines.append(json.dumps(VALID[index]))
        lines.append(bad)
    path = folder / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def ingest_partitions(database: Database, path: Path) -> tuple[list[str], list[str]]:
    """documents and chunks (which index BM25) of PATH's sources; returns their keys and skip lines."""
    with database.connection() as connection:
        keys = register_path(connection, path, 1_000_000).keys
    documents = materialize_documents(database, keys, max_bytes=1_000_000, batch_size=64)
    chunks = materialize_chunks(database, keys, max_tokens=60, overlap_tokens=10, batch_size=64)
    return keys, [str(problem) for problem in documents.problems + chunks.problems]


def test_each_bad_record_is_one_line_and_the_valid_records_of_its_file_land(
    database: Database, tmp_path: Path
) -> None:
    path = mixed_file(tmp_path / "inbox")
    _, skipped = ingest_partitions(database, path)
    valid_lines = {json.dumps(record) for record in VALID}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line in valid_lines:
            continue
        fragment = next(reason for bad, reason in BAD_LINES if bad == line)
        found = [entry for entry in skipped if entry.startswith(f"{path}:{number}:")]
        assert len(found) == 1 and fragment in found[0], (number, fragment, skipped)
        assert_one_line(found[0])
    assert len(skipped) == len(BAD_LINES), skipped
    with database.connection() as connection:
        stored = connection.execute("SELECT id, scopes FROM document ORDER BY id").fetchall()
        health = statistics_health(connection)
    assert stored == sorted((r["id"], sorted(r.get("scopes", []))) for r in VALID)
    assert statistics_consistent(health), health


def test_a_record_over_max_bytes_is_skipped_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"id": "big", "text": "x" * 5000}) + "\n" + json.dumps(VALID[1]) + "\n")
    read = read_source(SourceFile("inbox/big.jsonl", path, "jsonl"), max_bytes=1000)
    assert [document.id for document in read.documents] == ["ok-2"]
    assert [str(problem) for problem in read.problems] == [f"{path}:1: record is over pipeline.documents.max_bytes (1,000)"]


def test_chunks_the_database_refuses_leave_no_chunk_without_postings_and_spoil_no_later_ingest(
    database: Database, tmp_path: Path
) -> None:
    """A document stored by other means with scopes too wide for bm25_term's key: its chunks are
    refused whole (chunks and postings share one transaction), the refusal is one line, and an
    unrelated file ingested afterwards leaves consistent statistics."""
    wide = [f"tenant-{i:04d}" for i in range(900)]
    first = tmp_path / "first"
    first.mkdir()
    (first / "note.md").write_text("# Wide\n\nThe wide note names the harbour crane schedule.\n")
    with database.connection() as connection:
        keys = register_path(connection, first, 1_000_000).keys
    materialize_documents(database, keys, max_bytes=1_000_000, batch_size=64)
    with database.connection() as connection:
        connection.execute("UPDATE document SET scopes = %s, content_hash = 'changed'", (wide,))
    report = materialize_chunks(database, keys, max_tokens=60, overlap_tokens=10, batch_size=64)
    refusals = [str(problem) for problem in report.problems]
    assert len(refusals) == 1 and "index row size" in refusals[0], refusals
    assert_one_line(refusals[0])
    with database.connection() as connection:
        assert connection.execute("SELECT count(*) FROM chunk").fetchone()[0] == 0
        assert statistics_consistent(statistics_health(connection))

    second = tmp_path / "second"
    second.mkdir()
    (second / "other.md").write_text("# Other\n\nAn unrelated note about dock slots.\n")
    ingest_partitions(database, second)
    with database.connection() as connection:
        health = statistics_health(connection)
    assert statistics_consistent(health) and health["chunks"] > 0, health


@pytest.mark.parametrize(
    "case, lanes, fragments",
    [
        ("quote in a limit", replaced("limit: k\n", "limit: \"'\"\n"), ["lanes.", "limit", "cannot parse limit"]),
        ("deep limit", replaced("limit: k\n", "limit: \"" + "(" * 3000 + "k" + ")" * 3000 + "\"\n"), ["limit"]),
        ("long template name", replaced("template: sources\n", "template: " + "t" * 300 + "\n"), ["template", "File name too long"]),
        ("NUL in a template name", replaced("template: sources\n", 'template: "a\\0b"\n'), ["template"]),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 30 else None,
)
def test_check_turns_every_bad_lane_value_into_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, lanes: str, fragments: list[str]
) -> None:
    path = tmp_path / "lanes.yaml"
    path.write_text(lanes)
    status, _, stderr = run_cli(capsys, "check", "--offline", "--lanes", str(path))
    assert status == 2, stderr
    assert_one_line(stderr, str(path), *fragments)


def test_check_reports_an_unreadable_template_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = tmp_path / "binary.sql"
    template.write_bytes(b"SELECT \xff\xfe")
    unterminated = tmp_path / "quote.sql"
    unterminated.write_text("SELECT 'never closed")
    for broken, fragment in ((template, "not valid UTF-8"), (unterminated, "cannot parse")):
        path = tmp_path / "lanes.yaml"
        path.write_text(replaced("template: vector.sql\n", f"template: {broken}\n"))
        status, _, stderr = run_cli(capsys, "check", "--offline", "--lanes", str(path))
        assert status == 2, stderr
        assert_one_line(stderr, str(broken), fragment)

