"""Settings with every lane and part of the plan on: tests that must cover each lane (the lanes'
own tests, the leak tests) use them, also for the lanes lanes.yaml leaves off by default."""

from __future__ import annotations

from pipelines.config import LanegraphConfig

EVERY_PART = {
    "profiles": True, "communities": True, "raptor": True, "entity_catalog": True, "neighbors": True, "hops": 2,
    "fuzzy_mentions": True, "bridges": True, "named_facts": True, "turns": True,
}


def every_lane_on(config: LanegraphConfig) -> LanegraphConfig:
    return config.model_copy(update={"plan": config.plan.model_copy(update=EVERY_PART)})
