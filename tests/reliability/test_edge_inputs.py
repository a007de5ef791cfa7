"""Input edge cases: each lands whole or is refused by name, never half.

A raw line or paragraph separator inside a JSON string, a folder that links back into itself, a word
longer than any index row can hold, a markdown file that is only its title, and stored terminal escape
sequences printed by `find`.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest

from pipelines.cli.find import render
from pipelines.read.find import Candidate, FindResult
from pipelines.resources.database import Database
from pipelines.write.documents.bm25 import index_partitions, statistics_consistent, statistics_health
from pipelines.write.documents.chunking import chunk_document, count_tokens
from pipelines.write.documents.chunks import materialize_chunks
from pipelines.write.documents.documents import materialize_documents
from pipelines.write.documents.registry import register_path
from pipelines.write.documents.sources import SourceFile, discover_sources, read_source

MAX_BYTES = 1_000_000


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\r"])
def test_a_raw_separator_inside_a_json_string_stays_in_its_record(tmp_path: Path, separator: str) -> None:
    path = tmp_path / "notes.jsonl"
    records = [
        json.dumps({"id": "a", "text": f"one{separator}still one"}, ensure_ascii=False),
        json.dumps({"id": "b", "text": "two"}),
        "not json",
    ]
    path.write_text("\n".join(records) + "\n", encoding="utf-8", newline="")
    read = read_source(SourceFile("t/notes.jsonl", path, "jsonl"), MAX_BYTES)
    assert [document.id for document in read.documents] == ["a", "b"]
    assert read.documents[0].body == f"one{separator}still one"
    assert [problem.location for problem in read.problems] == [f"{path}:3"]


def test_a_folder_that_links_back_into_itself_is_read_once(tmp_path: Path) -> None:
    folder = tmp_path / "inbox"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\nThe heron nests.\n")
    (folder / "sub" / "b.md").write_text("# B\n\nThe owl hunts.\n")
    (folder / "sub" / "loop").symlink_to(folder, target_is_directory=True)
    (folder / "sub" / "again").symlink_to(folder / "sub", target_is_directory=True)
    (folder / "copy.md").symlink_to(folder / "a.md")
    sources, _ = discover_sources(folder)
    assert sorted(source.key for source in sources) == ["inbox/a.md", "inbox/sub/b.md"]


def test_an_over_long_word_is_cut_into_tokens_the_chunk_budget_counts() -> None:
    word = "x" * 2040
    chunks = chunk_document("Long word", f"The heron said {word} and flew away.", max_tokens=60, overlap_tokens=10)
    assert chunks and all(chunk.token_count <= 60 for chunk in chunks)
    assert count_tokens(word) > 1


def test_a_document_with_a_2040_character_word_and_large_scopes_gets_chunks_and_postings(
    make_database, tmp_path: Path
) -> None:
    database: Database = make_database()
    scopes = [f"s{i:02d}" + "x" * 60 for i in range(26)]
    path = tmp_path / "long.jsonl"
    # Incompressible, as a hash or an encoded blob is: PostgreSQL compresses a run of one letter.
    word = "".join(random.Random(0).choices(string.ascii_lowercase, k=2040))
    path.write_text(json.dumps({"id": "long", "text": f"The heron said {word} and flew.", "scopes": scopes}) + "\n")
    with database.connection() as connection:
        keys = register_path(connection, path, MAX_BYTES).keys
    documents = materialize_documents(database, keys, max_bytes=MAX_BYTES, batch_size=4)
    chunks = materialize_chunks(database, keys, max_tokens=60, overlap_tokens=10, batch_size=4)
    assert documents.problems == [] and chunks.problems == []
    bm25 = index_partitions(database, keys, batch_size=4)
    assert bm25.problems == []
    with database.connection() as connection:
        assert connection.execute("SELECT count(*) FROM chunk WHERE document_id = 'long'").fetchone()[0] >= 1
        assert connection.execute("SELECT count(*) FROM bm25_chunk_length").fetchone()[0] >= 1
        assert statistics_consistent(statistics_health(connection))


@pytest.mark.parametrize(
    "name, content",
    [("title.md", "# Only a title\n"), ("rule.md", "# Only a title\n\n   \n"), ("blank.txt", " \n\t\n")],
)
def test_a_document_with_no_text_is_refused_by_name(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    kind = "markdown" if name.endswith(".md") else "text"
    read = read_source(SourceFile(f"t/{name}", path, kind), MAX_BYTES)
    assert read.documents == ()
    assert len(read.problems) == 1 and read.problems[0].location == str(path)
    assert "text" in read.problems[0].reason or read.problems[0].reason == "empty file"


def test_a_jsonl_record_that_is_only_a_title_is_refused_by_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "t", "text": "# Only a title"}) + "\n" + json.dumps({"id": "u", "text": "Words."}) + "\n")
    read = read_source(SourceFile("t/t.jsonl", path, "jsonl"), MAX_BYTES)
    assert [document.id for document in read.documents] == ["u"]
    assert [problem.location for problem in read.problems] == [f"{path}:1"]


def test_find_never_prints_a_stored_terminal_escape_raw() -> None:
    hostile = "The heron \x1b[31mred\x1b[0m \x9b2J\x07 flies\x00 \u202eevil"
    candidate = Candidate(
        rank=0, lane="facts", kind="facts", evidence_id="c1", line=hostile, scopes=(), fact_id="f1",
        source_chunk_id=None, source_title="T\x1b]0;x\x07", source_uri=None, document_id=None,
        document_created_at=None, direct=True, stance="settled",
    )
    result = FindResult("q", (candidate,), (candidate,), (), (), 10, 100)
    printed = render(result, width=None)
    for control in ("\x1b", "\x9b", "\x07", "\x00", "\u202e"):
        assert control not in printed
    assert "\\x1b[31mred" in printed
    # --json keeps the stored text as it is (JSON escapes it).
    assert result.to_json()["evidence"][0]["line"] == hostile
