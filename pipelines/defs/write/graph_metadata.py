"""Plain metadata values (from `StepReport.metadata()` and friends) as Dagster metadata."""


from collections.abc import Mapping

import dagster as dg


def dagster_metadata(values: Mapping[str, object]) -> dict[str, object]:
    """Markdown tables and inline images render as markdown; everything else passes as is."""
    return {
        key: dg.MetadataValue.md(value) if isinstance(value, str) and value.startswith(("|", "![")) else value
        for key, value in values.items()
    }
