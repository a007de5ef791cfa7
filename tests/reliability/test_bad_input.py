"""Bad input everywhere: a one-line error that names the problem, a non-zero exit, nothing half-written.

Covers lanes.yaml (types, unknown and duplicate keys, YAML bombs, huge, binary and special files),
questions (empty, 100 kB, NUL, control characters, SQL fragments), command-line flags and
DATABASE_URL, in process through `pipelines.cli.main` and once through a real `lanegraph` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.config import load_config
from tests import REPOSITORY
from pipelines.resources.database import Database
from pipelines.errors import ConfigError
from tests.reliability.fingerprints import table_counts

VALID_LANES = (REPOSITORY / "lanes.yaml").read_text()


def replaced(old: str, new: str) -> str:
    assert old in VALID_LANES, old
    return VALID_LANES.replace(old, new, 1)


# (case, file content, a fragment the one-line error must contain)
BAD_LANES: list[tuple[str, bytes | str, str]] = [
    ("empty", "", "expected a mapping at the top level"),
    ("scalar", "just text\n", "expected a mapping at the top level"),
    ("list", "- 1\n- 2\n", "expected a mapping at the top level"),
    ("wrong type", replaced("budget_tokens: 4000", "budget_tokens: lots"), "settings.budget_tokens"),
    ("bool for int", replaced("budget_tokens: 4000", "budget_tokens: true"), "settings.budget_tokens"),
    ("unknown key", replaced("version: 1", "version: 1\nverison: 1"), "verison: unknown key"),
    ("unknown nested key", replaced("    dimension: 384", "    dimension: 384\n    dimensions: 384"), "unknown key"),
    ("unknown precision", replaced("    precision: auto ", "    precision: half "), "pipeline.embedding.precision: Input should be 'auto', 'float32' or 'bfloat16'"),
    ("duplicate key", replaced("version: 1", "version: 1\nversion: 1"), "duplicate key 'version'"),
    ("duplicate lane", replaced("lanes:\n", "lanes:\n  facts:\n    kind: facts\n"), "duplicate key 'lanes.facts'"),
    ("alias bomb", "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n", "aliases"),
    ("depth bomb", "a: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than"),
    ("huge", "version: 1\n" + "# padding\n" * 200_000, "too large"),
    ("invalid utf-8", b"version: 1\n\xff\xfe\n", "not valid UTF-8"),
    ("binary", bytes(range(256)) * 4, "not valid UTF-8"),
    ("nul character", "version: 1\x00\n", "invalid YAML"),
    ("python tag", "version: !!python/object/apply:os.system ['true']\n", "could not determine a constructor"),
    ("list as key", "? [a, b]\n: 1\n", "a key must be a plain name"),
    ("enormous integer", replaced("budget_tokens: 4000", "budget_tokens: " + "9" * 5000), "invalid YAML value"),
    ("impossible date", "version: 2024-13-45\n", "invalid YAML value"),
    ("two documents", "version: 1\n---\nversion: 1\n", "invalid YAML"),
    ("tab indentation", "pipeline:\n\tembedding: {}\n", "invalid YAML"),
]


def assert_one_line(message: str, *fragments: str) -> None:
    assert message and "\n" not in message.strip() and "Traceback" not in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize("case, content, fragment", BAD_LANES, ids=[case for case, _, _ in BAD_LANES])
def test_bad_lanes_yaml_is_one_line_naming_the_file(
    tmp_path: Path, case: str, content: bytes | str, fragment: str
) -> None:
    path = tmp_path / "lanes.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert_one_line(str(raised.value), str(path), fragment)


@pytest.mark.parametrize("special", ["/dev/zero", "directory", "missing"])
def test_lanes_path_that_is_not_a_readable_file(tmp_path: Path, special: str) -> None:
    path = {"/dev/zero": Path("/dev/zero"), "directory": tmp_path, "missing": tmp_path / "nope.yaml"}[special]
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert_one_line(str(raised.value), str(path))


@pytest.fixture()
def cli_database(make_schema_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    """DATABASE_URL pointing the in-process CLI at a fresh schema, with a few rows to watch."""
    url = make_schema_url()
    monkeypatch.setenv("DATABASE_URL", url)
    with Database(url) as database:
        with database.connection() as connection:
            connection.execute(
                "INSERT INTO document (id, title, body, content_hash) VALUES ('d', 'Heron', 'Heron flies.', 'h')"
            )
        yield database


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`lanegraph ARGV` in this process: exit status, stdout, stderr."""
    try:
        status = main(list(argv))
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["find", ""], "the question is empty"),
        (["find", "   \n\t "], "the question is empty"),
        (["find", "x" * 100_000], "the question is 100000 characters"),
        (["find", "Heron\x00"], "NUL"),
        (["find", "Heron \udcff"], "not valid UTF-8"),
        (["find", "Heron", "--k", "-1"], "k must be a positive integer"),
        (["find", "Heron", "--k", "0"], "k must be a positive integer"),
        (["find", "Heron", "--k", "many"], "argument --k: invalid int value"),
        (["find", "Heron", "--budget", "0"], "budget must be a positive number"),
        (["find", "Heron", "--scopes", "a,,b"], "--scopes: scope 2"),
        (["find", "Heron", "--scopes", "a,\x1b[31m"], "control characters"),
        (["find", "Heron", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["find", "Heron", "--lanes", "/dev/zero"], "not a regular file"),
        (["no-such-command"], "invalid choice"),
        (["find"], "the following arguments are required: question"),
    ],
    ids=lambda value: repr(value)[:40] if isinstance(value, list) else None,
)
def test_bad_command_lines_exit_non_zero_with_one_line_and_write_nothing(
    cli_database: Database, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    with cli_database.connection() as connection:
        before = table_counts(connection)
    status, _, stderr = run_cli(capsys, *argv)
    assert status != 0
    assert_one_line(stderr, fragment)
    with cli_database.connection() as connection:
        assert table_counts(connection) == before


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("not a url", "not a valid PostgreSQL connection string"),
        ("postgresql://nobody@127.0.0.1:1/lanegraph", "cannot connect to PostgreSQL at 127.0.0.1:1/lanegraph"),
        ("postgresql://[::1", "not a valid PostgreSQL connection string"),
        ("host=/nonexistent/socket/dir dbname=x", "cannot connect to PostgreSQL"),
    ],
)
def test_bad_database_url_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str, fragment: str
) -> None:
    monkeypatch.setenv("DATABASE_URL", url)
    status, _, stderr = run_cli(capsys, "find", "Heron")
    assert status != 0
    assert_one_line(stderr, fragment)


def test_a_real_process_exits_non_zero_without_a_traceback(tmp_path: Path) -> None:
    lanes = tmp_path / "lanes.yaml"
    lanes.write_text(replaced("version: 1", "version: 1\nversion: 2"))
    environment = {**os.environ, "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    finished = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "find", "Heron", "--lanes", str(lanes)],
        capture_output=True, text=True, env=environment, timeout=120,
    )
    assert finished.returncode == 2 and finished.stdout == ""
    duplicate_line = VALID_LANES.splitlines().index("version: 1") + 2
    assert_one_line(finished.stderr, f"{lanes}:{duplicate_line}: duplicate key 'version'")


def bad_documents(folder: Path) -> dict[str, str]:
    """Write one file per kind of bad document; returns file name -> what its skip line must say."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "binary.md").write_bytes(bytes(range(256)) * 16)
    (folder / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (folder / "empty.md").write_bytes(b"")
    with (folder / "enormous.md").open("wb") as enormous:
        enormous.truncate(load_config().pipeline.documents.max_bytes + 1)  # sparse: costs no disk
    (folder / "broken.jsonl").write_text('{"id": "b1", "text": \n[1, 2]\n{"id": "b3", "text": 5}\n')
    return {
        "binary.md": "binary file", "latin1.txt": "invalid UTF-8", "empty.md": "empty file",
        "enormous.md": "max_bytes", "broken.jsonl:1": "invalid JSON", "broken.jsonl:2": "expected a JSON object",
        "broken.jsonl:3": "'text' must be a string",
    }


def ingest_json(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, dict]:
    status, out, err = run_cli(capsys, "ingest", str(path), "--no-graph", "--json")
    assert out.strip(), err
    return status, json.loads(out)


@pytest.mark.slow
def test_bad_documents_are_skipped_with_one_line_each_and_leave_no_rows(
    cli_database: Database, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "inbox"
    expected = bad_documents(folder)
    with cli_database.connection() as connection:
        before = table_counts(connection)

    status, report = ingest_json(capsys, folder)

    assert status != 0, "every input was refused, yet the command reported success"
    skipped = report["skipped"]
    for where, reason in expected.items():
        lines = [line for line in skipped if f"{folder / where}:" in line + ":"]
        assert len(lines) == 1 and reason in lines[0], (where, skipped)
        assert_one_line(lines[0])
    # Bookkeeping may change: the registry notes every file it saw, extraction seeds the ontology.
    bookkeeping = {"document_source": 0, "entity_kind": 0}
    with cli_database.connection() as connection:
        assert table_counts(connection) | bookkeeping == before | bookkeeping
