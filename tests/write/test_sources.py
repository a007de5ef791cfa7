"""Reading source files: titles, identities, and bad input turned into reasons, never exceptions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.errors import InputError
from pipelines.write.documents.sources import SourceFile, discover_sources, jsonl_documents, read_source


def jsonl_document(line: str):
    (document,) = jsonl_documents(line)
    return document


def source(path: Path, kind: str) -> SourceFile:
    return SourceFile(f"{path.parent.name}/{path.name}", path, kind)


def test_markdown_title_is_first_heading_and_text_title_is_stem(tmp_path: Path) -> None:
    markdown = tmp_path / "notes.md"
    markdown.write_text("Intro line.\n\n# Project Heron #\n\nBody.\n")
    text = tmp_path / "plain-notes.txt"
    text.write_text("# Not a title in a text file\nBody.\n")

    (heron,) = read_source(source(markdown, "markdown"), max_bytes=10_000).documents
    (plain,) = read_source(source(text, "text"), max_bytes=10_000).documents

    assert (heron.id, heron.title, heron.uri) == (f"{tmp_path.name}/notes.md", "Project Heron", markdown.as_uri())
    assert plain.title == "plain-notes"


def test_jsonl_identity_is_id_then_uri_then_text_hash() -> None:
    given = jsonl_document(json.dumps({"id": "d1", "uri": "https://x/1", "text": "A."}))
    by_uri = jsonl_document(json.dumps({"uri": "https://x/2", "text": "B."}))
    by_hash = jsonl_document(json.dumps({"text": "C."}))

    assert given.id == "d1"
    assert by_uri.id == "https://x/2"
    assert by_hash.id.startswith("sha256:") and by_hash.id == jsonl_document(json.dumps({"text": "C."})).id


def test_jsonl_fields_are_typed_and_scopes_normalised() -> None:
    document = jsonl_document(json.dumps({
        "id": "d1", "title": "T", "text": "Body.", "observed_at": "2025-07-01T08:15:00Z",
        "expires_at": "2026-01-01", "scopes": ["team-b", "team-a", "team-b"],
    }))

    assert document.observed_at == datetime(2025, 7, 1, 8, 15, tzinfo=UTC)
    assert document.expires_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert document.scopes == ("team-a", "team-b")


def test_changing_scopes_changes_the_content_hash() -> None:
    public = jsonl_document(json.dumps({"id": "d", "text": "Same."}))
    private = jsonl_document(json.dumps({"id": "d", "text": "Same.", "scopes": ["team-a"]}))
    assert public.content_hash != private.content_hash


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"id": "x"}', "field 'text' is missing or empty"),
        ('{"text": "t", "scope": ["a"]}', "unknown field 'scope'"),
        ('{"text": "t", "scopes": "team-a"}', "field 'scopes': expected a list"),
        ('{"text": "t", "observed_at": "yesterday"}', "field 'observed_at' is not an ISO 8601 time"),
        ('{"text": 5}', "field 'text' must be a string"),
    ],
)
def test_malformed_jsonl_records_name_the_field(record: str, reason: str) -> None:
    with pytest.raises(InputError, match=reason):
        jsonl_document(record)


def test_bad_jsonl_lines_are_skipped_with_line_numbers_and_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "a", "text": "One."}\n\nnot json\n{"id": "a", "text": "Again."}\n{"id": "b", "text": "Two."}\n')

    read = read_source(source(path, "jsonl"), max_bytes=10_000)

    assert [d.id for d in read.documents] == ["a", "b"]
    assert [(p.location, p.reason.split(":")[0]) for p in read.problems] == [
        (f"{path}:3", "invalid JSON"),
        (f"{path}:4", "duplicate id 'a' (first on line 1)"),
    ]
    assert not read.unreadable


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "binary file"),
        (b"caf\xe9 au lait", "invalid UTF-8 at byte 3"),
        (b"  \n\n", "empty file"),
        (b"x" * 101, "101 bytes is over pipeline.documents.max_bytes (100)"),
    ],
)
def test_unreadable_files_become_one_reason(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "bad.md"
    path.write_bytes(content)

    read = read_source(source(path, "markdown"), max_bytes=100)

    assert read.documents == () and read.unreadable
    assert len(read.problems) == 1 and reason in read.problems[0].reason


def test_discovery_keys_files_by_folder_name_and_ignores_other_types(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.md").write_text("# A\n")
    (corpus / "sub" / "b.txt").write_text("B\n")
    (corpus / "picture.png").write_bytes(b"\x89PNG")
    (corpus / ".hidden.md").write_text("# H\n")

    sources, ignored = discover_sources(corpus)

    assert [(s.key, s.kind) for s in sources] == [("corpus/a.md", "markdown"), ("corpus/sub/b.txt", "text")]
    assert [Path(p.location).name for p in ignored] == ["picture.png"]
    assert discover_sources(corpus / "a.md")[0][0].key == "corpus/a.md"
    with pytest.raises(InputError, match="no such file or folder"):
        discover_sources(tmp_path / "missing")


def test_turns_keep_speaker_session_and_order_and_read_as_transcript_lines(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in [
        {"conversation": "c1", "session": 1, "speaker": "Caroline", "text": "Hey Mel!", "observed_at": "2023-05-08T13:56:00"},
        {"conversation": "c1", "session": 1, "speaker": "Melanie", "text": "Melanie: Hi!", "observed_at": "2023-05-08T13:56:00"},
        {"conversation": "c1", "session": 2, "speaker": "Caroline", "text": "Back again.", "scopes": ["c1"]},
    ]))

    first, second, third = read_source(source(path, "jsonl"), max_bytes=10_000).documents

    assert [document.id for document in (first, second, third)] == ["c1:1:1", "c1:1:2", "c1:2:1"]
    assert (first.title, first.body, first.observed_at) == ("c1, session 1", "Caroline: Hey Mel!", datetime(2023, 5, 8, 13, 56, tzinfo=UTC))
    assert second.body == "Melanie: Hi!"
    assert first.turn is not None and (first.turn.speaker, first.turn.session, first.turn.position) == ("Caroline", "1", 1)
    assert third.scopes == ("c1",)


def test_a_chat_log_line_is_one_turn_per_message_named_or_by_role() -> None:
    documents = jsonl_documents(json.dumps({
        "conversation": "support-42", "observed_at": "2025-01-02T10:00:00Z",
        "messages": [
            {"role": "user", "name": "Dana", "content": "My build fails on step 3."},
            {"role": "assistant", "content": [{"type": "text", "text": "Which error?"}], "timestamp": "2025-01-02T10:01:00Z"},
            {"role": "assistant", "content": ""},
        ],
    }))

    assert [(document.id, document.body) for document in documents] == [
        ("support-42:1", "Dana: My build fails on step 3."),
        ("support-42:2", "assistant: Which error?"),
    ]
    assert documents[1].observed_at == datetime(2025, 1, 2, 10, 1, tzinfo=UTC)
    assert documents[0].observed_at == datetime(2025, 1, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"conversation": "c", "text": "Hi"}, "field 'speaker' is missing"),
        ({"speaker": "A", "text": "Hi"}, "field 'conversation' is missing"),
        ({"conversation": "c", "speaker": "A", "text": "Hi", "turn": -1}, "field 'turn' must be a whole number"),
        ({"conversation": "c", "messages": [{"content": "x"}]}, "'messages\\[0\\]' has neither a name nor a role"),
        ({"conversation": "c", "messages": [{"role": "user", "content": 5}]}, "'messages\\[0\\].content' must be text"),
        ({"conversation": "c", "messages": [{"role": "user", "text": "x"}]}, "unknown field 'messages\\[0\\].text'"),
        ({"conversation": "c", "messages": [{"role": "user", "content": "x", "timestamp": "noon"}]}, "'messages\\[0\\].timestamp' is not an ISO 8601 time"),
        ({"messages": [{"role": "user", "content": "x"}]}, "field 'conversation' is missing"),
    ],
)
def test_malformed_conversation_records_name_the_field(record: dict, reason: str) -> None:
    with pytest.raises(InputError, match=reason):
        jsonl_documents(json.dumps(record))
