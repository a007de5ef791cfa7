"""Strict YAML: duplicate keys, anchors and oversized files are errors, and every key keeps its line.

PyYAML silently keeps the last of two duplicate keys and expands aliases without bound (a "billion
laughs" document); a settings file that a user edits by hand deserves neither. The models such a
file validates against derive from `StrictModel`, so unknown keys and wrong types are errors too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import pydantic
import yaml

from pipelines.errors import ConfigError

MAX_SETTINGS_BYTES = 1 << 20
# PyYAML composes nested nodes recursively: "[[[[..." a few thousand deep overflows the stack.
MAX_NESTING = 64

KeyPath = tuple[str | int, ...]


class StrictModel(pydantic.BaseModel):
    """Unknown keys and wrong types are errors, never silently coerced or ignored."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, strict=True)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records the line of every mapping key and refuses aliases and duplicates."""

    def __init__(self, stream: str, source: str) -> None:
        super().__init__(stream)
        self.source = source
        self.key_lines: dict[KeyPath, int] = {}
        self.depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise ConfigError(
                f"{self.source}:{event.start_mark.line + 1}: YAML aliases (*{event.anchor}) are not "
                "allowed in settings files; write the value out"
            )
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                line = self.peek_event().start_mark.line + 1
                raise ConfigError(f"{self.source}:{line}: nested more than {MAX_NESTING} levels deep")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_document(self, node):
        self._record_lines(node, ())
        return super().construct_document(node)

    def _record_lines(self, node: yaml.Node, path: KeyPath) -> None:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise ConfigError(f"{self.source}:{line}: a key must be a plain name, not a list or mapping")
                key = key_node.value
                if key in seen:
                    dotted = ".".join(str(p) for p in (*path, key))
                    raise ConfigError(
                        f"{self.source}:{line}: duplicate key '{dotted}' "
                        f"(first defined on line {seen[key]})"
                    )
                seen[key] = line
                self.key_lines[(*path, key)] = line
                self._record_lines(value_node, (*path, key))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.key_lines[(*path, index)] = item.start_mark.line + 1
                self._record_lines(item, (*path, index))


def read_settings_text(path: Path) -> str:
    """A settings file's text, refused unless it is a regular file of at most 1 MiB of UTF-8."""
    source = str(path)
    try:
        # Only a regular file: a directory fails to read, and /dev/zero or a FIFO never ends.
        if not path.is_file():
            raise ConfigError(f"{source}: not a regular file")
        with path.open("rb") as stream:
            raw = stream.read(MAX_SETTINGS_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{source}: cannot read settings file ({error.strerror})") from None
    if len(raw) > MAX_SETTINGS_BYTES:
        raise ConfigError(f"{source}: too large for a settings file (limit 1 MiB)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{source}: not valid UTF-8 at byte {error.start}") from None
    return text


def parse_strict_yaml(text: str, source: str) -> tuple[Any, dict[KeyPath, int]]:
    """Parse one YAML document read from `source`; return the data and the line of every key path."""
    loader = None
    try:
        # The reader rejects NUL and other control characters as soon as it is constructed.
        loader = _StrictLoader(text, source)
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{source}{line}: invalid YAML: {error.problem or error.context}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: invalid YAML: {' '.join(str(error).split())}") from None
    except ValueError as error:
        # A scalar that resolves to a type but cannot be built: a 5000-digit int, month 13.
        reason = str(error).split(";")[0]
        raise ConfigError(f"{source}: invalid YAML value: {reason}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, loader.key_lines


def line_of(key_lines: dict[KeyPath, int], location: KeyPath) -> int | None:
    """The line of the deepest recorded prefix of a key path (a missing key points at its parent)."""
    for end in range(len(location), 0, -1):
        line = key_lines.get(tuple(location[:end]))
        if line is not None:
            return line
    return None


def validation_error_message(
    source: Path | str, error: pydantic.ValidationError, key_lines: dict[KeyPath, int]
) -> str:
    """The first validation problem as `file:line: dotted.key: message`."""
    first = error.errors()[0]
    location = tuple(part for part in first["loc"] if not str(part).startswith("function-"))
    line = line_of(key_lines, location)
    dotted = ".".join(str(part) for part in location) or "(top level)"
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    where = f"{source}:{line}" if line else str(source)
    more = len(error.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{where}: {dotted}: {message}{suffix}"


Model = TypeVar("Model", bound=pydantic.BaseModel)


def validated_yaml(model: type[Model], text: str, source: str) -> Model:
    """`text`, YAML read from `source`, validated as `model`; every problem names the file, line and key."""
    data, key_lines = parse_strict_yaml(text, source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as error:
        raise ConfigError(validation_error_message(source, error, key_lines)) from None
