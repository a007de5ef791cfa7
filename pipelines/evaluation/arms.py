"""The arms an evaluation compares, all over one database (same corpus, same embeddings).

- `bm25` and `dense`: one ranking of the sources lane run alone (its BM25 primitive, its dense part),
  compiled from the very templates the find statement uses, so a baseline can never drift from the
  ranking inside find.
- `sources`: the find statement with the sources lane only (hybrid score fusion and the bridge hop).
- `ppr`: personalized PageRank over the entity graph, run exactly in Python (`ppr.py`): the graph
  reference the find statement's bounded rankings are measured against.
- `find`: the full find statement as lanes.yaml configures it.
- `find-minus-<lane>` / `find-minus-<part>`: the full statement with one lane, or one part of the
  facts lane (neighbors, walk, fuzzy_mentions) or of the sources lane (bridges, named_facts, turns), taken out of the
  plan.
- one arm per extra lanes.yaml, named after the file: its full find statement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipelines.config import LanegraphConfig, load_config

from pipelines.read.compiler import (
    CompiledStatement,
    bind_values,
    compile_template,
    query_bind_types,
    setting_type,
)
from pipelines.read.dialect import parse_query
from pipelines.read.lane_parts import Part, lane_parts
from pipelines.lanes_config import SETTING_NAMES, template_path
from pipelines.errors import InputError

# Ablations of composite lanes' parts: arm suffix → (lane kind, the plan change that removes the part).
PART_ABLATIONS: dict[str, tuple[str, dict[str, object]]] = {
    "neighbors": ("facts", {"neighbors": False}),
    "walk": ("facts", {"hops": 0}),
    "fuzzy_mentions": ("facts", {"fuzzy_mentions": False}),
    "bridges": ("sources", {"bridges": False}),
    "named_facts": ("sources", {"named_facts": False}),
    "turns": ("sources", {"turns": False}),
}
# The sources lane's rankings, and how fuse.sql reads each: (column, best first when descending).
RANKING_ORDER: dict[str, tuple[str, bool]] = {"bm25": ("score", True), "dense": ("rank", False)}
PPR_ARM = "ppr"


@dataclass(frozen=True)
class Arm:
    """One way of answering: the full find statement under `config`, or one `ranking` alone (a
    sources-lane ranking, or the exact PageRank reference)."""

    name: str
    config: LanegraphConfig
    ranking: str | None = None


def _enabled_lanes(config: LanegraphConfig) -> list[str]:
    return [name for name in config.plan.order if config.plan.includes(name, config.lanes[name].kind)]


def _with_plan(config: LanegraphConfig, **changes: object) -> LanegraphConfig:
    return config.model_copy(update={"plan": config.plan.model_copy(update=changes)})


def _only_lanes(config: LanegraphConfig, keep: Sequence[str]) -> LanegraphConfig:
    plan = config.plan.model_copy(update={"order": list(keep)})
    return config.model_copy(update={"plan": plan, "lanes": {name: config.lanes[name] for name in keep}})


def sources_lane(config: LanegraphConfig) -> str:
    """The lane whose rankings the baselines run: the first enabled sources lane made of parts."""
    for name in _enabled_lanes(config):
        lane = config.lanes[name]
        if lane.kind == "sources" and template_path(lane.template).is_dir():
            return name
    raise InputError(
        "lanes.yaml enables no sources lane made of parts (dense, bm25, title, fuse); the bm25, dense "
        "and sources arms need one"
    )


def ablation_arms(config: LanegraphConfig) -> list[Arm]:
    lanes = _enabled_lanes(config)
    arms = [
        Arm(f"find-minus-{lane}", _only_lanes(config, [name for name in lanes if name != lane]))
        for lane in lanes
        if len(lanes) > 1
    ]
    kinds_with_parts = {
        config.lanes[name].kind for name in lanes if template_path(config.lanes[name].template).is_dir()
    }
    plan = config.plan
    present = {
        "neighbors": plan.neighbors,
        "walk": plan.hops > 0,
        "fuzzy_mentions": plan.hops > 0 and plan.fuzzy_mentions,
        "bridges": plan.bridges,
        "named_facts": plan.named_facts,
        "turns": plan.turns,
    }
    arms += [
        Arm(f"find-minus-{part}", _with_plan(config, **change))
        for part, (kind, change) in PART_ABLATIONS.items()
        if kind in kinds_with_parts and present[part]
    ]
    return arms


def lanes_file_arm(path: Path, base: LanegraphConfig) -> Arm:
    config = load_config(path)
    if config.pipeline != base.pipeline:
        raise InputError(
            f"{path}: its pipeline section differs from the evaluated build's; arms share one build, so "
            "compare retrieval settings only (run eval with LANEGRAPH_CONFIG pointing at this file to "
            "evaluate its write settings)"
        )
    return Arm(path.stem, config)


def standard_arms(config: LanegraphConfig) -> list[Arm]:
    sources = sources_lane(config)
    return [
        *(Arm(name, config, ranking=name) for name in (*RANKING_ORDER, PPR_ARM)),
        Arm("sources", _only_lanes(config, [sources])),
        Arm("find", config),
        *ablation_arms(config),
    ]


def choose_arms(config: LanegraphConfig, selected: Sequence[str] | None, lanes_files: Sequence[Path]) -> list[Arm]:
    """The standard arms (or those `selected`), then one arm per lanes file."""
    arms = standard_arms(config)
    if selected:
        known = {arm.name: arm for arm in arms}
        unknown = [name for name in selected if name not in known]
        if unknown:
            raise InputError(f"unknown arm {unknown[0]!r}; arms are: {', '.join(known)}")
        arms = [known[name] for name in dict.fromkeys(selected)]
    for path in lanes_files:
        arm = lanes_file_arm(path, config)
        if any(existing.name == arm.name for existing in arms):
            raise InputError(f"{path}: arm name {arm.name!r} (the file name) is already taken; rename the file")
        arms.append(arm)
    return arms


@dataclass(frozen=True)
class RankingStatement:
    """One sources-lane ranking compiled on its own: the statement, the settings its binds stand
    for, and where the chunk id and the ranking key sit in its rows."""

    statement: CompiledStatement
    aliases: Mapping[str, str]
    chunk_column: int
    key_column: int
    descending: bool

    def values(self, config: LanegraphConfig, question: str, query_vector: object) -> dict[str, object]:
        values = bind_values(config, question=question, query_vector=query_vector)
        values.update({bind: values[target] for bind, target in self.aliases.items()})
        return values

    def chunk_ids(self, rows: Sequence[tuple]) -> list[str]:
        """Best first, ties by chunk id, as fuse.sql ranks them (the part itself need not sort)."""
        sign = -1 if self.descending else 1
        ordered = sorted(rows, key=lambda row: (sign * row[self.key_column], row[self.chunk_column]))
        return [row[self.chunk_column] for row in ordered]


def _ranking_part(config: LanegraphConfig, ranking: str) -> tuple[Part, Path]:
    """The sources lane's part of that name, and its template."""
    name = sources_lane(config)
    for part in lane_parts(name, config.lanes[name], config.plan):
        if part.name == ranking and part.template is not None:
            return part, part.template
    raise InputError(f"lanes.{name}: the sources lane has no {ranking!r} ranking to evaluate alone")


def ranking_statement(config: LanegraphConfig, ranking: str) -> RankingStatement:
    part, template = _ranking_part(config, ranking)
    dimension = config.pipeline.embedding.dimension
    per_question = query_bind_types(dimension)
    bind_types = {
        bind: setting_type(target) if target in SETTING_NAMES else per_question[target]
        for bind, target in part.binds.items()
    }
    statement = compile_template(template, bind_types=bind_types, dimension=dimension)
    columns = parse_query(statement.sql).named_selects
    key, descending = RANKING_ORDER[ranking]
    for needed in ("chunk_id", key):
        if needed not in columns:
            raise InputError(f"{part.template}: the {ranking} ranking must select a {needed} column")
    return RankingStatement(statement, dict(part.binds), columns.index("chunk_id"), columns.index(key), descending)
