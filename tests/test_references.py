"""What the code, the templates and the docs cite exists: no design note, path or issue number a
reader of the repository cannot open."""

from __future__ import annotations

import re

from tests import REPOSITORY

SOURCES = [
    REPOSITORY / "README.md", REPOSITORY / "CHANGELOG.md", *sorted((REPOSITORY / "docs").glob("*.md")), REPOSITORY / "lanes.yaml",
    *sorted((REPOSITORY / "pipelines").rglob("*.py")), *sorted((REPOSITORY / "sql_templates").rglob("*.*")),
]
DOCUMENT = re.compile(r"\b[A-Z][A-Z_]+\.md\b")
PATH = re.compile(r"\b(?:pipelines|sql_templates|tests)/[\w./*-]*[\w*]")
ISSUE = re.compile(r"\bissues? #?\d+|(?<![\w&])#\d+\b", re.IGNORECASE)


def cited(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(REPOSITORY)), match)
        for path in SOURCES
        for match in pattern.findall(path.read_text(encoding="utf-8"))
    ]


def test_every_cited_markdown_file_exists():
    names = {path.name for path in REPOSITORY.rglob("*.md")}
    assert [(where, name) for where, name in cited(DOCUMENT) if name not in names] == []


def test_every_cited_path_exists():
    missing = [(where, path) for where, path in cited(PATH) if not list(REPOSITORY.glob(path.rstrip("/.")))]
    assert missing == []


def test_nothing_cites_an_issue_number():
    assert cited(ISSUE) == []
