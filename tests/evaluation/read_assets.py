"""The read side's evaluation assets materialized as the UI does, with find_statement upstream."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping

import dagster as dg

from pipelines.defs.read.find_statement import find_statement
from pipelines.resources.database import DatabaseResource

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def materialized_metadata(
    asset: dg.AssetsDefinition, config: Mapping[str, object], database_url: str
) -> Mapping[str, dg.MetadataValue]:
    """`asset`'s materialization metadata, after find_statement planned against `database_url`'s
    schema (the evaluation builds in its own database)."""
    name = asset.key.to_user_string()
    result = dg.materialize(
        [find_statement, asset],
        resources={"database": DatabaseResource(database_url=database_url)},
        run_config={"ops": {name: {"config": dict(config)}}},
    )
    assert result.success
    (materialization,) = [
        event.materialization for event in result.get_asset_materialization_events() if event.asset_key == asset.key
    ]
    return materialization.metadata


def inline_png(markdown: str, title: str = r"[^\]]+") -> bytes:
    """The PNG a markdown image `![title](data:image/png;base64,...)` carries, checked to be one."""
    encoded = re.fullmatch(rf"!\[{title}\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", markdown)
    assert encoded is not None, markdown[:80]
    png = base64.b64decode(encoded.group(1))
    assert png.startswith(PNG_SIGNATURE)
    return png
