"""The retrieval sections of lanes.yaml: the plan, the tuning settings and one entry per lane.

Declared once as strict pydantic models: `pipelines.config.LanegraphConfig` embeds them, strict
YAML loading turns every validation error into `file:line: key: message`, and the editor JSON Schema
is generated from the same models. Values (settings) never shape the compiled statement; the plan
and the lane entries do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pydantic
import sqlglot
from pydantic import Field
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError
from sqlglot import exp

from pipelines.shipped import SQL_TEMPLATES
from pipelines.strict_yaml import StrictModel

LANE_TEMPLATES = SQL_TEMPLATES / "lanes"

LaneKind = Literal["facts", "sources", "working_memory", "profile", "communities", "overview"]

# The depth of every ANN window. A constant because under the generic plan a bound `LIMIT $n` is
# costed as a tenth of the table, so past a few thousand rows PostgreSQL sequential-scans and sorts
# rather than take the HNSW index (and returns exact neighbours where a custom plan returns
# approximate ones). At 100 rows the index path is the cheaper one from roughly 3k rows up
# (measured on MuSiQue chunks: 684 against 1512); find sets `hnsw.ef_search` to at least it
# (`ann_search_depth`), so the scan can fill it. Settings that cut a window are at most this deep.
ANN_WINDOW = 100
# pgvector's largest hnsw.ef_search.
MAX_ANN_SEARCH_DEPTH = 1000

# The largest integer and float setting. Integers are bound as bigint and a lane limit multiplies up to
# three of them (10^18 still fits bigint); a float is bound as double precision and scaled by others,
# where a huge or infinite weight would overflow or turn every score into NaN. No useful value comes
# near either bound, so a value beyond one is refused when lanes.yaml is read, not when find runs.
MAX_INTEGER_SETTING = 1_000_000
MAX_FLOAT_SETTING = 1e6
# Settings that are no bind (find applies them itself), exempt from the bounds above.
UNBOUND_SETTINGS = frozenset({"budget_tokens"})

# The plan toggle that decides whether lanes of a kind exist; kinds not listed always exist.
KIND_TOGGLES: dict[str, str] = {"profile": "profiles", "communities": "communities", "overview": "raptor"}
# The plan toggle of a lane whose kind it shares with lanes that always exist (the entity catalog's
# rows land among the sources).
LANE_TOGGLES: dict[str, str] = {"entity_catalog": "entity_catalog"}


class Settings(StrictModel):
    """Tuning values. Each is bound into the find statement under its own name, or applied to the
    whole statement (STATEMENT_SETTINGS), so changing one never changes the SQL text and takes
    effect on the next call."""

    # At least 1: the sources and facts lanes' limits are multiples of k, so 0 would silently drop both.
    k: int = Field(default=8, ge=1, description="Evidence rows the sources lane keeps; the unit of most limits.")
    fusion_depth: int = Field(default=40, ge=1, le=ANN_WINDOW, description="Depth of every ranking before fusion or merging.")
    find_max_distance: float = Field(default=0.75, gt=0, le=2, description="Cosine distance floor of every dense ranking.")
    ann_search_depth: int = Field(
        default=ANN_WINDOW, ge=ANN_WINDOW, le=MAX_ANN_SEARCH_DEPTH,
        description="Candidates each HNSW search keeps (hnsw.ef_search), at least the ANN window: deeper finds more of the exact nearest neighbours and costs more (not bound into the SQL).",
    )
    fact_candidate_factor: int = Field(default=3, ge=0, description="The facts lane keeps k times this many facts.")
    dense_weight: float = Field(default=0.3, ge=0, description="Weight of the dense ranking's scaled similarity in the sources lane's fusion.")
    lexical_weight: float = Field(default=0.7, ge=0, description="Weight of the BM25 ranking's scaled score in the sources lane's fusion.")
    rrf_k: int = Field(default=60, ge=1, description="Rank decay of the bridge hop's rankings: a chunk at rank r gains bridge_weight * rrf_k / (rrf_k + r).")
    find_per_document: int = Field(default=2, ge=1, description="At most this many source chunks per document.")
    bridge_seeds: int = Field(default=3, ge=0, description="Best first-fusion chunks whose named entities and titles the bridge hop follows.")
    bridge_seed_share: float = Field(
        default=0.6, ge=0, le=1,
        description="A bridge seed's fused score must be at least this share of the best chunk's (0 follows every seed).",
    )
    bridge_weight: float = Field(default=0.5, ge=0, description="Score the bridge hop adds to a linked chunk at the top of its ranking.")
    bridge_fanout: int = Field(default=50, ge=0, description="The bridge hop skips entities and titles named in this many chunks or more (hubs).")
    named_fact_weight: float = Field(
        default=0.3, ge=0,
        description="Score a chunk gains as the source of the named entities' fact nearest the question, scaled down to 0 for the farthest kept.",
    )
    turn_reply_weight: float = Field(
        default=0.5, ge=0,
        description="Share of a found turn's fused score that the next turn of its session gains (a reply answers the turn before it).",
    )
    turn_context_weight: float = Field(
        default=0.25, ge=0,
        description="Share of a found turn's fused score that the turn before it gains (what the found turn answers or goes on from).",
    )
    named_title_bonus: float = Field(default=1.0, ge=0, description="Fused-score bonus of a chunk whose document title the question names.")
    unqualified_title_bonus: float = Field(
        default=0.5, ge=0,
        description="Fused-score bonus of a chunk whose document title the question names without its parenthesised qualifier.",
    )
    common_title_mentions: float = Field(
        default=5.0, gt=0,
        description="A title bonus is scaled by this over the passages naming the title, at most 1: a title many passages name is a common concept.",
    )
    snippet_chars: int = Field(default=1200, ge=40, description="Source lines keep this many characters of the chunk (1200 keeps a whole 200-token chunk).")
    recency_weight: float = Field(default=0.05, ge=0, description="Weight of recency in the dense-fact blend.")
    frequency_weight: float = Field(default=0.02, ge=0, description="Weight of ln(1 + access_count) in the dense-fact blend.")
    recency_half_life_days: float = Field(default=30.0, gt=0, description="Days after which a fact's recency bonus halves.")
    graph_ppr_frontier: int = Field(default=16, ge=1, le=ANN_WINDOW, description="Entities each walk hop spreads mass from.")
    graph_ppr_damping: float = Field(default=0.85, gt=0, le=1, description="Share of mass an entity passes on per hop.")
    graph_mass_window: int = Field(default=64, ge=1, description="Entities kept after accumulating every hop.")
    graph_dangling_factor: float = Field(default=0.5, ge=0, le=1, description="Mass of an endpoint outside the window, as a share of the other's.")
    mention_mass: float = Field(default=1.0, gt=0, description="Seed mass of an entity the question names exactly.")
    mention_fuzzy_similarity: float = Field(default=0.6, gt=0, le=1, description="Trigram similarity a fuzzy mention needs (its mass scales by it).")
    mention_fuzzy_max_words: int = Field(default=3, ge=1, description="Longest question term (in words) matched fuzzily; each term is one index probe.")
    dense_entity_seed_weight: float = Field(default=0.5, ge=0, description="Seed mass of a dense entity, times its similarity; used only when nothing is named.")
    fact_endpoint_seed_weight: float = Field(default=0.5, ge=0, description="Seed mass of a dense fact's endpoint, times its similarity; used only when nothing is named.")
    catalog_entities_per_kind: int = Field(default=12, ge=1, description="Entities listed on one entity catalog line.")
    session_find_k: int = Field(default=3, ge=0, le=ANN_WINDOW, description="Working-memory items kept.")
    profile_find_k: int = Field(default=2, ge=0, le=ANN_WINDOW, description="Entity profiles kept.")
    community_find_k: int = Field(default=2, ge=0, le=ANN_WINDOW, description="Community summaries kept.")
    raptor_k: int = Field(default=2, ge=0, description="RAPTOR root summaries kept.")
    bm25_k1: float = Field(default=1.2, ge=0, description="Okapi BM25 term-frequency saturation.")
    bm25_b: float = Field(default=0.75, ge=0, le=1, description="Okapi BM25 length normalisation.")
    budget_tokens: int = Field(default=4000, ge=1, description="Token budget find packs evidence into (not bound into the SQL).")


    @pydantic.field_validator("*")
    @classmethod
    def _fits_its_bind(cls, value: object, info: pydantic.ValidationInfo) -> object:
        if info.field_name in UNBOUND_SETTINGS:
            return value
        if isinstance(value, int) and value > MAX_INTEGER_SETTING:
            raise _invalid(f"must be at most {MAX_INTEGER_SETTING:,} (got {value:,})")
        if isinstance(value, float) and abs(value) > MAX_FLOAT_SETTING:
            raise _invalid(f"must be at most {MAX_FLOAT_SETTING:,.0f} (got {value:g})")
        return value


SETTING_NAMES = frozenset(Settings.model_fields)
# Settings find applies to its whole statement, bound into no lane's SQL: a lane cannot override them.
STATEMENT_SETTINGS = frozenset({"ann_search_depth", "budget_tokens"})
INTEGER_SETTINGS = frozenset(name for name, field in Settings.model_fields.items() if field.annotation is int)

_LIMIT_OPERATORS = (exp.Add, exp.Sub, exp.Mul, exp.Paren)


def limit_expression(text: str) -> exp.Expr:
    """Parse a lane limit: integer settings joined by + - * and parentheses, never a literal
    (a literal would freeze a value into the SQL text)."""
    try:
        tree = sqlglot.parse_one(text, read="postgres")
    # A stray quote fails in the tokenizer (TokenError), deep parentheses in the recursive parser.
    except (sqlglot.errors.SqlglotError, RecursionError):
        raise _invalid(f"cannot parse limit expression {text!r}") from None
    for node in tree.walk():
        if isinstance(node, exp.Column):
            if node.table or node.name not in SETTING_NAMES:
                raise _invalid(f"unknown setting '{node.sql()}' in limit expression {text!r}")
            if node.name not in INTEGER_SETTINGS:
                raise _invalid(f"setting '{node.name}' is not an integer; a limit counts rows")
        elif isinstance(node, exp.Identifier) and isinstance(node.parent, exp.Column):
            continue
        elif not isinstance(node, _LIMIT_OPERATORS):
            raise _invalid(
                f"limit expression {text!r} may only combine setting names with + - * and "
                f"parentheses (found {node.sql()!r})"
            )
    return tree


def _invalid(message: str) -> PydanticCustomError:
    # A custom error keeps the message as written (a ValueError gets a "Value error, " prefix).
    return PydanticCustomError("lane_setting", message)


def _reason(error: Exception) -> str:
    return getattr(error, "strerror", None) or str(error)


def template_path(template: str) -> Path:
    """A template path as written in lanes.yaml: relative to sql_templates/lanes/, or absolute."""
    path = Path(template)
    return path if path.is_absolute() else LANE_TEMPLATES / path


class Plan(StrictModel):
    """Which lanes and parts the statement has: every field here is part of its shape. The defaults
    are lanes.yaml's: what did not earn its place in the evaluation is off."""

    order: list[str] = Field(
        default_factory=lambda: list(STANDARD_LANES),
        min_length=1,
        description="Lane names, highest priority first; every lane under `lanes` exactly once.",
    )
    profiles: bool = Field(default=False, description="Include lanes of kind profile.")
    communities: bool = Field(default=False, description="Include lanes of kind communities.")
    raptor: bool = Field(default=False, description="Include lanes of kind overview (RAPTOR roots).")
    entity_catalog: bool = Field(default=False, description="Include the entity_catalog lane (live entities of the kinds nearest the question).")
    neighbors: bool = Field(default=False, description="The facts lane adds one-hop neighbors of its dense seeds.")
    hops: int = Field(default=0, ge=0, le=8, description="Hops of the facts lane's mass walk; 0 leaves the walk out.")
    fuzzy_mentions: bool = Field(default=False, description="Find named entities by trigram similarity as well as exactly.")
    bridges: bool = Field(
        default=True,
        description="The sources lane adds a second hop: chunks titled with or naming the entities its best chunks name.",
    )
    named_facts: bool = Field(
        default=False,
        description="The sources lane lifts the source chunks of the facts about the entities the question names, nearest the question first.",
    )
    turns: bool = Field(
        default=True,
        description="The sources lane lifts the turns next to a conversation turn it found (the reply after it, the turn before it).",
    )

    def includes(self, name: str, kind: str) -> bool:
        """Whether the lane `name` of kind `kind` is part of the statement."""
        toggles = [toggle for toggle in (KIND_TOGGLES.get(kind), LANE_TOGGLES.get(name)) if toggle is not None]
        return all(getattr(self, toggle) for toggle in toggles)


class Lane(StrictModel):
    kind: LaneKind = Field(description="The prompt section the lane's rows land in.")
    template: str = Field(
        description="SQL template (or directory of named parts), relative to sql_templates/lanes/."
    )
    limit: str = Field(description="Rows the lane keeps: integer settings with + - * and parentheses, e.g. `k * fact_candidate_factor`.")
    settings: Settings = Field(
        default=Settings(),
        description="Per-lane overrides; only the keys written here apply, the rest come from `settings`.",
    )

    @pydantic.field_validator("limit")
    @classmethod
    def _limit_names_settings(cls, value: str) -> str:
        limit_expression(value)
        return value

    @pydantic.field_validator("settings")
    @classmethod
    def _no_statement_settings(cls, value: Settings) -> Settings:
        overridden = sorted(STATEMENT_SETTINGS & value.model_fields_set)
        if overridden:
            raise _invalid(f"{', '.join(overridden)} applies to the whole find statement, not to one lane: set it under `settings`")
        return value

    @pydantic.field_validator("template")
    @classmethod
    def _template_exists(cls, value: str) -> str:
        try:
            found = template_path(value).exists()
        # A name too long for the file system (OSError) or holding a NUL character (ValueError).
        except (OSError, ValueError) as error:
            raise _invalid(f"template {value[:80]!r} is not a usable file name ({_reason(error)})") from None
        if not found:
            raise _invalid(f"template {value!r} not found under {LANE_TEMPLATES}")
        return value

    @property
    def overrides(self) -> frozenset[str]:
        return frozenset(self.settings.model_fields_set)


# The seven standard lanes in the default priority order that lanes.yaml spells out: source
# passages first, because facts ranked above them pushed them out of the top of the evidence.
# Built without validation: the templates are checked when a statement is compiled, and importing
# the settings models must never depend on files being present.
STANDARD_LANES: dict[str, Lane] = {
    name: Lane.model_construct(kind=kind, template=template, limit=limit, settings=Settings())
    for name, kind, template, limit in (
        ("sources", "sources", "sources", "k + k"),
        ("facts", "facts", "facts", "k * fact_candidate_factor"),
        ("entity_catalog", "sources", "entity_catalog.sql", "k"),
        ("working_memory", "working_memory", "vector.sql", "session_find_k"),
        ("profile", "profile", "vector.sql", "profile_find_k"),
        ("communities", "communities", "vector.sql", "community_find_k"),
        ("overview", "overview", "overview.sql", "raptor_k"),
    )
}


def check_plan_names_lanes(plan: Plan, lanes: dict[str, Lane]) -> None:
    """The plan orders exactly the lanes defined; raised as a validation error located at the key."""
    problems: list[InitErrorDetails] = []
    seen: set[str] = set()
    for position, name in enumerate(plan.order):
        if name not in lanes:
            problems.append(_error(("plan", "order", position), name, f"'{name}' is not a lane defined under `lanes`"))
        elif name in seen:
            problems.append(_error(("plan", "order", position), name, f"lane '{name}' is ordered twice"))
        seen.add(name)
    for name in lanes:
        if name not in seen:
            problems.append(_error(("lanes", name), name, f"lane '{name}' is missing from plan.order"))
    if problems:
        raise ValidationError.from_exception_data("LanegraphConfig", problems)


def _error(location: tuple[str | int, ...], value: str, message: str) -> InitErrorDetails:
    return InitErrorDetails(type=_invalid(message), loc=location, input=value)
