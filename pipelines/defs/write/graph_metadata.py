"""Plain metadata values (from `StepReport.metadata()` and friends) as Dagster metadata."""


from collections.abc import Mapping
from typing import Any

import dagster as dg


# Any: Dagster's type of raw metadata values is not public.
def dagster_metadata(values: Mapping[str, object]) -> dict[str, Any]:
    """Markdown tables and inline images render as markdown; everything else passes as is."""
    return {
        key: dg.MetadataValue.md(value) if isinstance(value, str) and value.startswith(("|", "![")) else value
        for key, value in values.items()
    }
