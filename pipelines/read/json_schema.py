"""The JSON Schema editors use to validate lanes.yaml, generated from the same pydantic models the
loader validates with, so the two can never disagree. `lanes.schema.json` at the project root is
this output; a test fails when it is stale."""

from __future__ import annotations

import json

from pipelines.config import LanegraphConfig


def lanes_json_schema() -> str:
    schema = LanegraphConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Lanegraph lanes.yaml"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
