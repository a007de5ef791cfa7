"""A tuned lanes.yaml: the user's own file with the tuned values in place, comments and order kept.

ruamel.yaml round-trips the file, so every comment, blank line and key order survives; a tuned
setting the file did not spell out (it took the default) is added at the end of its section. The
result is validated exactly as lanes.yaml is before anything is written, and written whole (a
temporary file renamed over the target), so a reader never sees half a file.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from pipelines.config import LanegraphConfig, load_config
from pipelines.errors import ConfigError
from pipelines.strict_yaml import read_settings_text
from pipelines.tuning.space import Scalar


def _section(document: CommentedMap, name: str) -> CommentedMap:
    section = document.get(name)
    if section is None:
        section = document[name] = CommentedMap()
    if not isinstance(section, CommentedMap):
        raise ConfigError(f"lanes.yaml: `{name}` is not a mapping; cannot write tuned values into it")
    return section


def tuned_lanes_text(source: Path, settings: Mapping[str, Scalar], plan: Mapping[str, Scalar]) -> str:
    """The text of `source` with these settings and plan toggles."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a user's long lines or flow lists
    document = yaml.load(read_settings_text(source))
    if not isinstance(document, CommentedMap):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    for section_name, values in (("settings", settings), ("plan", plan)):
        section = _section(document, section_name)
        for name, value in values.items():
            section[name] = value
    buffer = io.StringIO()
    yaml.dump(document, buffer)
    return buffer.getvalue()


def write_tuned_lanes(source: Path, target: Path, settings: Mapping[str, Scalar], plan: Mapping[str, Scalar]) -> LanegraphConfig:
    """Write the tuned file to `target` once it loads as valid settings; return those settings."""
    text = tuned_lanes_text(source, settings, plan)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        try:
            config = load_config(Path(temporary))
        except ConfigError as error:
            raise ConfigError(str(error).replace(temporary, str(target))) from None
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return config
