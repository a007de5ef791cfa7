"""Which named parts a lane is made of under a plan, and what each part reads.

A lane whose template is a file is one part. A composite lane's template is a directory of named
parts; the plan decides which parts exist (neighbors, the walk and its hop count, fuzzy mentions,
the sources lane's bridge hop and turns), and that choice is the lane's shape. A part reads other parts as if
they were tables: `reads` maps the table name its template uses to the part that provides it, so
one `walk_hop.sql` serves every hop and `keep.sql` reads the last fusion, bridged or not. Unions of parts are generated here, never written by hand, because their width follows the
plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.errors import ConfigError
from pipelines.lanes_config import Lane, Plan, template_path
from pipelines.shipped import SQL_TEMPLATES

PRIMITIVES = SQL_TEMPLATES / "primitives"


@dataclass(frozen=True)
class Part:
    """A CTE of the lane: a template file, or a UNION ALL of earlier parts' `columns`."""

    name: str
    template: Path | None = None
    reads: Mapping[str, str] = field(default_factory=dict)
    binds: Mapping[str, str] = field(default_factory=dict)
    union_of: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()


def lane_parts(name: str, lane: Lane, plan: Plan) -> list[Part]:
    """The lane's parts in dependency order; the last one yields the lane's rows."""
    path = template_path(lane.template)
    if path.is_file():
        return [Part("rows", path)]
    if not path.is_dir():
        raise ConfigError(f"lanes.{name}.template: {lane.template!r} is neither a file nor a directory")
    composite = _COMPOSITES.get(lane.kind)
    if composite is None:
        raise ConfigError(
            f"lanes.{name}.template: {lane.template!r} is a directory, but only lanes of kind "
            f"{' or '.join(sorted(_COMPOSITES))} are made of parts"
        )
    return composite(path, plan)


def _facts(directory: Path, plan: Plan) -> list[Part]:
    parts = [Part("dense", directory / "dense.sql")]
    ranked = ["dense"]
    if plan.neighbors:
        parts.append(Part("neighbors", directory / "neighbors.sql"))
        ranked.append("neighbors")
    if plan.hops > 0:
        parts.append(Part("exact_mention", directory / "mentions.sql"))
        mention = "exact_mention"
        if plan.fuzzy_mentions:
            parts.append(Part("fuzzy_mention", directory / "fuzzy_mentions.sql"))
            mention = "fuzzy_mention"
        parts.append(Part("walk_seed", directory / "walk_seed.sql", reads={"mention": mention}))
        hops = ["walk_seed"]
        for hop in range(1, plan.hops + 1):
            parts.append(Part(f"walk_hop_{hop}", directory / "walk_hop.sql", reads={"previous_hop": hops[-1]}))
            hops.append(f"walk_hop_{hop}")
        parts.append(Part("walk_mass", union_of=tuple(hops), columns=("entity_id", "mass")))
        parts.append(Part("connected", directory / "connected.sql"))
        ranked.append("connected")
    parts.append(Part("ranked_part", union_of=tuple(ranked), columns=("fact_id", "part_rank")))
    parts.append(Part("merge", directory / "merge.sql"))
    return parts


def _sources(directory: Path, plan: Plan) -> list[Part]:
    # The BM25 ranking is the shared primitive, bound to this lane's depth and question.
    parts = [
        Part("dense", directory / "dense.sql"),
        Part(
            "bm25",
            PRIMITIVES / "bm25.sql",
            binds={"bm25_limit": "fusion_depth", "query_text": "question"},
        ),
        Part("title", directory / "title.sql"),
        Part("fuse", directory / "fuse.sql"),
    ]
    scored = "fuse"
    if plan.bridges:
        parts.append(Part("bridge", directory / "bridge.sql"))
        scored = "bridge"
    if plan.named_facts:
        scored = _lend(parts, directory, "named_facts", scored)
    if plan.turns:
        scored = _lend(parts, directory, "turns", scored)
    parts.append(Part("keep", directory / "keep.sql", reads={"scored": scored}))
    return parts


def _lend(parts: list[Part], directory: Path, name: str, scored: str) -> str:
    """Append a part that lends score to chunks (its template `<name>.sql` yields only the lent
    rows, and may read `scored`), the union of `scored` and the lent rows, and their sum per chunk
    (`lift.sql`). Returns the name of the part that now holds the scores."""
    lent, lifted = f"{name}_lent", f"{name}_lifted"
    parts.append(Part(lent, directory / f"{name}.sql", reads={"scored": scored}))
    parts.append(Part(lifted, union_of=(scored, lent), columns=("chunk_id", "score", "direct")))
    parts.append(Part(name, directory / "lift.sql", reads={"lifted": lifted}))
    return name


_COMPOSITES = {"facts": _facts, "sources": _sources}
