"""The documentation is checked like code: every `lanegraph ...` command line in README.md,
CHANGELOG.md and docs/*.md parses with the CLI's own parser, every relative link resolves (its #anchor too), the
configuration reference lists every key of lanes.yaml with its default and allowed values, and the
README stays an entry page. The checkers are functions over text, so a test can show each one
failing on a broken line."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines.cli import build_parser
from pipelines.config import LanegraphConfig, load_config
from pipelines.write.documents.sources import jsonl_documents
from tests import REPOSITORY

DOCS = REPOSITORY / "docs"
README = REPOSITORY / "README.md"
CONFIGURATION = DOCS / "configuration.md"
QUICK_START = ("pip install -e . && lanegraph demo", "pip install -e '.[test]' && ruff check && mypy && pytest")
README_MAX_LINES = 250


def markdown_files() -> list[Path]:
    return [README, REPOSITORY / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]


# --- commands -------------------------------------------------------------------------------------

FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
SHELL_LANGUAGES = {"bash", "sh", "shell", "console", "zsh"}
INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
# Where a shell command ends and the next begins (&& || | ; & and parentheses), and redirections.
SEPARATOR_CHARACTERS = "&|;()"
REDIRECTIONS = {">", ">>", "<", ">&", "<<"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _code_blocks(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """(first line number, language, lines) of every fenced block."""
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number].lstrip())
        if not opening:
            number += 1
            continue
        fence, language = opening.group(1), opening.group(2).lower()
        body: list[str] = []
        start = number + 2
        number += 1
        while number < len(lines) and not lines[number].lstrip().startswith(fence):
            body.append(lines[number])
            number += 1
        number += 1
        yield start, language, body


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """Every line outside fenced blocks, numbered."""
    inside: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        opening = FENCE.match(line.lstrip())
        if inside is None and opening:
            inside = opening.group(1)
        elif inside is not None and line.lstrip().startswith(inside):
            inside = None
        elif inside is None:
            yield number, line


def _shell_commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line: split at && || | ; and parentheses, comments and
    leading VAR=value assignments dropped, each $( ... ) inside a word read as a line of its own."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    substituted: list[list[str]] = []
    redirected = False
    for word in lexer:
        if redirected:  # the file a > or < names
            redirected = False
        elif word in REDIRECTIONS:
            redirected = True
        elif set(word) <= set(SEPARATOR_CHARACTERS):
            commands.append([])
        else:
            for inner in re.findall(r"\$\(([^()]*)\)", word):
                substituted += _shell_commands(inner)
            commands[-1].append(word)
    simple = []
    for command in commands:
        while command and ASSIGNMENT.match(command[0]):
            command = command[1:]
        if command:
            simple.append(command)
    return simple + substituted


def command_lines(text: str) -> list[tuple[int, list[str]]]:
    """(line number, arguments after `lanegraph`) of every lanegraph command line in the markdown's
    shell blocks (a `$ ` prompt, comments and backslash continuations allowed)."""
    logical: list[tuple[int, str]] = []
    for start, language, body in _code_blocks(text):
        if language not in SHELL_LANGUAGES:
            continue
        pending, first = "", start
        for offset, line in enumerate(body):
            if not pending:
                first = start + offset
                line = re.sub(r"^\s*\$\s", "", line)
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            logical.append((first, pending + line))
            pending = ""
    return _lanegraph_commands(logical)


def command_mentions(text: str) -> list[tuple[int, list[str]]]:
    """The same for inline code in prose that starts with `lanegraph `: a command named in a
    sentence, perhaps with the options it is about, not a whole command line."""
    spans = [
        (number, code)
        for number, line in _prose_lines(text)
        for code in INLINE_CODE.findall(line)
        if code.startswith("lanegraph ")
    ]
    return _lanegraph_commands(spans)


def _lanegraph_commands(lines: list[tuple[int, str]]) -> list[tuple[int, list[str]]]:
    found: list[tuple[int, list[str]]] = []
    for number, line in lines:
        # An empty quoted argument ('') is a value like any other; shlex's punctuation mode drops it.
        line = re.sub(r"(?<=\s)(''|\"\")(?=\s|$)", "EMPTY", line)
        try:
            commands = _shell_commands(line)
        except ValueError as error:  # an unclosed quote
            found.append((number, [f"<unreadable shell line: {error}>"]))
            continue
        found += [(number, command[1:]) for command in commands if command[0] == "lanegraph"]
    return found


_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        _PARSER = build_parser()  # every command's real subparser, not the lazy placeholders
    return _PARSER


def parse_problem(arguments: list[str]) -> str | None:
    """Why `lanegraph ARGUMENTS` does not parse, as the CLI would say it, or None."""
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            parsed, unknown = _parser().parse_known_args(arguments)
    except SystemExit:
        return errors.getvalue().strip().splitlines()[-1] if errors.getvalue().strip() else "refused"
    if unknown and not getattr(parsed, "passes_unknown_arguments", False):
        return f"unrecognized arguments: {' '.join(unknown)}"
    return None


def mention_problem(arguments: list[str]) -> str | None:
    """Why an inline mention names no real command, subcommand or option, or None. Its required
    arguments may be left out: a sentence names a command, it does not run it."""
    parser = _parser()
    options: dict[str, argparse.Action] = {}
    taking_value = False
    for word in arguments:
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            if name not in options:
                return f"no option {word} here"
            taking_value = "=" not in word and options[name].nargs != 0
            continue
        if taking_value:
            taking_value = False
            continue  # the option's value
        subcommands = next((action for action in parser._actions if isinstance(action, argparse._SubParsersAction)), None)
        if subcommands is None:
            continue  # an argument's value
        if word not in subcommands.choices:
            return f"no command {word!r}"
        parser = subcommands.choices[word]
        options = {option: action for action in parser._actions for option in action.option_strings}
    return None


def command_problems(text: str) -> list[str]:
    """Every command line that does not parse, and every inline mention naming what does not exist."""
    return [
        f"line {number}: lanegraph {shlex.join(arguments)}: {problem}"
        for number, arguments, problem in sorted(
            [(number, arguments, parse_problem(arguments)) for number, arguments in command_lines(text)]
            + [(number, arguments, mention_problem(arguments)) for number, arguments in command_mentions(text)],
            key=lambda found: found[0],
        )
        if problem is not None
    ]


# --- links ----------------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings: lower case, punctuation dropped, spaces as hyphens,
    a repeated one numbered."""
    seen: dict[str, int] = {}
    result = set()
    for _, line in _prose_lines(text):
        heading = HEADING.match(line)
        if not heading:
            continue
        title = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(2)).lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def link_problems(path: Path, text: str) -> list[str]:
    """Every relative link of the markdown at `path` whose file or #anchor does not exist."""
    problems = []
    for number, line in _prose_lines(text):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                problems.append(f"line {number}: {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text(encoding="utf-8")):
                problems.append(f"line {number}: {target}: no heading #{anchor} in {linked.name}")
    return problems


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(REPOSITORY)))
def test_every_lanegraph_command_line_parses(path: Path):
    assert command_problems(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(REPOSITORY)))
def test_every_relative_link_resolves(path: Path):
    assert link_problems(path, path.read_text(encoding="utf-8")) == []


def test_shell_syntax_around_a_command_is_read_as_the_shell_reads_it():
    text = "\n".join([
        "Run `lanegraph ui --port 3001` or `lanegraph_fold_accents`.",
        "```bash",
        "$ lanegraph find \"Who leads Project Heron now?\" --k 4  # a comment",
        "pip install -e . && lanegraph demo",
        "lanegraph eval --dataset PATH \\",
        "    --queries 20",
        'DATABASE_URL="$(lanegraph db replica add standby2 | tail -1)" lanegraph find "q"',
        "```",
        "```yaml",
        "lanegraph: not a command",
        "```",
    ])
    assert command_lines(text) == [
        (3, ["find", "Who leads Project Heron now?", "--k", "4"]),
        (4, ["demo"]),
        (5, ["eval", "--dataset", "PATH", "--queries", "20"]),
        (7, ["find", "q"]),
        (7, ["db", "replica", "add", "standby2"]),
    ]
    assert command_mentions(text) == [(1, ["ui", "--port", "3001"])]
    assert command_problems(text) == []


def test_the_checkers_fail_on_a_broken_command_and_a_broken_link(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "asking.md").write_text("# Asking\n\n## Budgets\n")
    broken = "\n".join([
        "# Page",
        "See [asking](docs/asking.md#budgets), [gone](docs/gone.md) and [no anchor](docs/asking.md#scopes).",
        "```bash",
        'lanegraph find "Who leads Project Heron now?" --k eight',
        "lanegraph finnd x",
        "lanegraph check --offlne",
        "```",
        "Then `lanegraph ingest --full-graf` and `lanegraph db migrat`.",
    ])
    page = tmp_path / "README.md"
    page.write_text(broken)
    assert link_problems(page, broken) == [
        "line 2: docs/gone.md: no such file",
        "line 2: docs/asking.md#scopes: no heading #scopes in asking.md",
    ]
    problems = command_problems(broken)
    assert len(problems) == 5
    assert "line 4:" in problems[0] and "invalid int value: 'eight'" in problems[0]
    assert "line 5:" in problems[1] and "invalid choice: 'finnd'" in problems[1]
    assert "line 6:" in problems[2] and "unrecognized arguments: --offlne" in problems[2]
    assert problems[3].endswith("lanegraph ingest --full-graf: no option --full-graf here")
    assert problems[4].endswith("lanegraph db migrat: no command 'migrat'")


def test_every_json_example_is_a_record_ingest_accepts_or_a_valid_document():
    # A block of one-line objects shows records; a block that spreads one object over lines shows
    # a configuration (an MCP client's, say), which must at least be valid JSON.
    records = []
    for path in markdown_files():
        for _, language, body in _code_blocks(path.read_text(encoding="utf-8")):
            lines = [line for line in body if line.strip()]
            if language not in {"json", "jsonl"} or not lines:
                continue
            if all(line.lstrip().startswith("{") and line.rstrip().endswith("}") for line in lines):
                records += lines
            else:
                json.loads("\n".join(lines))
    assert records and all(jsonl_documents(line) for line in records)


# --- the configuration reference ------------------------------------------------------------------

ROW = re.compile(r"^\|\s*`([a-z_][\w.<>]*)`\s*\|([^|]*)\|([^|]*)\|")
# Keys documented by their own row; what lies below them is documented elsewhere on the page.
LANE_ENTRY = "lanes.<name>"


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    if len(node.get("allOf", [])) == 1:
        return _resolve(schema, node["allOf"][0])
    return node


def schema_keys() -> dict[str, dict[str, Any]]:
    """Every key of lanes.yaml by dotted path, from lanes.schema.json; a lane entry's keys under
    `lanes.<name>`, its `settings` overrides as one key."""
    schema = json.loads((REPOSITORY / "lanes.schema.json").read_text())
    keys: dict[str, dict[str, Any]] = {}

    def walk(node: dict[str, Any], prefix: str) -> None:
        node = _resolve(schema, node)
        for name, child in node.get("properties", {}).items():
            path = prefix + name
            resolved = _resolve(schema, child)
            entry = resolved.get("additionalProperties")
            if isinstance(entry, dict):
                walk(entry, f"{path}.<name>.")
            elif "properties" in resolved and path != f"{LANE_ENTRY}.settings":
                walk(child, path + ".")
            else:
                keys[path] = {**resolved, **child}

    walk(schema, "")
    return keys


def expected_default(path: str, key: dict[str, Any]) -> object:
    """The default the schema declares, else the settings model's (a default factory), else None
    (the key is required or has no single default)."""
    if "<name>" in path:
        return None
    if "default" in key:
        return key["default"]
    value: object = LanegraphConfig(version=1)
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


def expected_allowed(key: dict[str, Any]) -> str:
    if "const" in key:
        return f"only `{key['const']}`"
    if "enum" in key:
        return "one of " + ", ".join(f"`{value}`" for value in key["enum"])
    bounds = [
        f"{sign} {key[name]}"
        for name, sign in (("exclusiveMinimum", ">"), ("minimum", "≥"), ("maximum", "≤"), ("exclusiveMaximum", "<"))
        if name in key
    ]
    return ", ".join(bounds)


def reference_rows(text: str) -> dict[str, tuple[str, str]]:
    """(default cell, allowed cell) by key, from the page's tables of `| key | default | allowed | meaning |`."""
    rows = {}
    for _, line in _prose_lines(text):
        row = ROW.match(line)
        if row and "." in row.group(1) or row and row.group(1) == "version":
            rows[row.group(1)] = (row.group(2).strip(), row.group(3).strip())
    return rows


def configuration_problems(text: str) -> list[str]:
    keys, rows = schema_keys(), reference_rows(text)
    problems = [f"{path}: not in lanes.schema.json" for path in rows if path not in keys]
    for path, key in keys.items():
        if path not in rows:
            problems.append(f"{path}: missing; expected a row like | `{path}` | {_default_cell(path, key)} | {expected_allowed(key)} | ... |")
            continue
        default_cell, allowed_cell = rows[path]
        default = expected_default(path, key)
        if default is not None and yaml.safe_load(default_cell.strip("`") or "null") != default:
            problems.append(f"{path}: default cell {default_cell!r}, expected {_default_cell(path, key)}")
        if allowed_cell != expected_allowed(key):
            problems.append(f"{path}: allowed cell {allowed_cell!r}, expected {expected_allowed(key)!r}")
    return problems


def _default_cell(path: str, key: dict[str, Any]) -> str:
    default = expected_default(path, key)
    return "required" if default is None else f"`{yaml.safe_dump(default, default_flow_style=True).strip().removesuffix('...').strip()}`"


def test_the_configuration_reference_lists_every_key_with_its_default_and_range():
    assert configuration_problems(CONFIGURATION.read_text(encoding="utf-8")) == []


def test_the_configuration_check_fails_on_a_stale_default_and_an_unknown_key():
    text = CONFIGURATION.read_text(encoding="utf-8")
    stale = re.sub(r"^\| `settings\.k` \| `8` \|", "| `settings.k` | `10` |", text, flags=re.MULTILINE)
    stale = re.sub(r"^\| `settings\.rrf_k` .*\n", "", stale, flags=re.MULTILINE)
    stale += "\n| `settings.k_prime` | `1` | | not a key |\n"
    assert sorted(configuration_problems(stale)) == [
        "settings.k: default cell '`10`', expected `8`",
        "settings.k_prime: not in lanes.schema.json",
        "settings.rrf_k: missing; expected a row like | `settings.rrf_k` | `60` | ≥ 1 | ... |",
    ]


def test_the_shipped_lanes_yaml_sets_every_key_at_its_documented_default():
    # The page says so: the reference's defaults are what a user running the shipped file gets.
    shipped = load_config(REPOSITORY / "lanes.yaml")
    assert shipped.model_dump(exclude={"lanes"}) == LanegraphConfig(version=1).model_dump(exclude={"lanes"})


def test_the_configuration_reference_names_every_environment_variable():
    read = set()
    for source in (REPOSITORY / "pipelines").rglob("*.py"):
        read |= set(re.findall(r"\"((?:LANEGRAPH_[A-Z_]+)|DATABASE_URL)\"", source.read_text(encoding="utf-8")))
    text = CONFIGURATION.read_text(encoding="utf-8")
    assert read and sorted(name for name in read if f"`{name}`" not in text) == []


# --- the README -----------------------------------------------------------------------------------


def test_the_readme_is_an_entry_with_the_quick_start_unchanged():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    blocks = [body for _, _, body in _code_blocks(text)]
    assert any(body == list(QUICK_START) for body in blocks), "the Quick start's two command lines, alone in one block"
    assert QUICK_START[1] in (REPOSITORY / ".ci" / "run").read_text()


def test_the_readme_links_every_docs_page():
    linked = {Path(target.partition("#")[0]).name for target in LINK.findall(README.read_text(encoding="utf-8"))}
    assert sorted(page.name for page in DOCS.glob("*.md") if page.name not in linked) == []
