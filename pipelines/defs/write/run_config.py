"""Run config defaults of the write-side assets, read from lanes.yaml's `pipeline` section when a
run starts rather than when the code loads: an asset, and a check that reads the asset's config,
see the file as it is at run time, and a value given in the run config wins."""

from collections.abc import Callable
from typing import Any

from pydantic import Field

from pipelines.config import PipelineSettings, load_config


def lanes_yaml_default(pick: Callable[[PipelineSettings], Any]) -> Any:
    return Field(default_factory=lambda: pick(load_config().pipeline))
