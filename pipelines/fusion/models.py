"""Immutable, validated values the fusion engine consumes and returns, and the client protocol.

Construction checks types and closed value sets only. A sub-query whose arguments are missing is
still constructible: the engine reports it as a degraded reason at fuse time,
so one malformed request never crashes the call that carries it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

Tier = Literal["0", "1", "2"]
SubQueryType = Literal["entity_state", "predicate_walk", "temporal_range", "bm25", "find"]

TIERS: tuple[str, ...] = ("0", "1", "2")
SUBQUERY_TYPES: tuple[str, ...] = ("entity_state", "predicate_walk", "temporal_range", "bm25", "find")


def _require_str(owner: str, field: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{owner}.{field} must be a str, got {type(value).__name__}")


def _require_int(owner: str, field: str, value: object) -> None:
    # bool is an int subclass; True as a count is always a caller mistake.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{field} must be an int, got {type(value).__name__}")


def _require_tier(owner: str, value: object) -> None:
    if value not in TIERS:
        raise ValueError(f"{owner}.tier must be one of '0', '1', '2', got {value!r}")


def _str_tuple(owner: str, field: str, values: Iterable[str]) -> tuple[str, ...]:
    # A bare string is iterable and would silently become a tuple of characters.
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise TypeError(f"{owner}.{field} must be a sequence of str, got {type(values).__name__}")
    items = tuple(values)
    for position, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{owner}.{field}[{position}] must be a str, got {type(item).__name__}")
    return items


@dataclass(frozen=True, slots=True)
class Evidence:
    """One fused hit. `entity_id` is the dedup key; `score` is comparable only within a tier."""

    entity_id: str
    tier: Tier
    source: str
    score: float = 0.0
    snippet_text: str = ""
    body_ref: str = ""

    def __post_init__(self) -> None:
        _require_str("Evidence", "entity_id", self.entity_id)
        _require_tier("Evidence", self.tier)
        _require_str("Evidence", "source", self.source)
        if isinstance(self.score, bool) or not isinstance(self.score, (int, float)):
            raise TypeError(f"Evidence.score must be a number, got {type(self.score).__name__}")
        # NaN compares false both ways, which would make ranking depend on completion order.
        if math.isnan(self.score):
            raise ValueError(f"Evidence.score must not be NaN (entity_id {self.entity_id!r})")
        object.__setattr__(self, "score", float(self.score))
        _require_str("Evidence", "snippet_text", self.snippet_text)
        _require_str("Evidence", "body_ref", self.body_ref)


@dataclass(frozen=True, slots=True)
class EntityStateArgs:
    entity_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "entity_ids", _str_tuple("EntityStateArgs", "entity_ids", self.entity_ids))


@dataclass(frozen=True, slots=True)
class PredicateWalkArgs:
    """Walk from `seeds` over `predicates` (empty = every predicate) up to `max_hops` hops."""

    seeds: tuple[str, ...]
    predicates: tuple[str, ...] = ()
    max_hops: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", _str_tuple("PredicateWalkArgs", "seeds", self.seeds))
        object.__setattr__(
            self, "predicates", _str_tuple("PredicateWalkArgs", "predicates", self.predicates)
        )
        _require_int("PredicateWalkArgs", "max_hops", self.max_hops)
        if self.max_hops < 0:
            raise ValueError(f"PredicateWalkArgs.max_hops must be >= 0, got {self.max_hops}")

    @property
    def hops(self) -> int:
        """Hops the client walks: the source contract resolves 0 to 1 at execution."""
        return self.max_hops or 1


@dataclass(frozen=True, slots=True)
class TemporalRangeArgs:
    """A window given as ISO 8601 / RFC 3339 strings; an empty `topic` means every topic."""

    start: str
    end: str
    topic: str = ""

    def __post_init__(self) -> None:
        for field in ("start", "end"):
            value = getattr(self, field)
            _require_str("TemporalRangeArgs", field, value)
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(
                    f"TemporalRangeArgs.{field} must be an ISO 8601 timestamp, got {value!r}"
                ) from None
        _require_str("TemporalRangeArgs", "topic", self.topic)


@dataclass(frozen=True, slots=True)
class BM25Args:
    query: str

    def __post_init__(self) -> None:
        _require_str("BM25Args", "query", self.query)


@dataclass(frozen=True, slots=True)
class FindArgs:
    """Run the compiled find statement for `question`, asking for `k` rows."""

    question: str
    k: int = 8

    def __post_init__(self) -> None:
        _require_str("FindArgs", "question", self.question)
        _require_int("FindArgs", "k", self.k)
        if self.k < 1:
            raise ValueError(f"FindArgs.k must be >= 1, got {self.k}")


_ARGUMENT_CLASSES: dict[str, type] = {
    "entity_state": EntityStateArgs,
    "predicate_walk": PredicateWalkArgs,
    "temporal_range": TemporalRangeArgs,
    "bm25": BM25Args,
    "find": FindArgs,
}


@dataclass(frozen=True, slots=True)
class SubQuery:
    """A typed retrieval request; the field named like `type` carries its arguments."""

    type: SubQueryType
    tier: Tier
    source: str
    entity_state: EntityStateArgs | None = None
    predicate_walk: PredicateWalkArgs | None = None
    temporal_range: TemporalRangeArgs | None = None
    bm25: BM25Args | None = None
    find: FindArgs | None = None

    def __post_init__(self) -> None:
        if self.type not in SUBQUERY_TYPES:
            raise ValueError(f"SubQuery.type must be one of {', '.join(SUBQUERY_TYPES)}, got {self.type!r}")
        _require_tier("SubQuery", self.tier)
        _require_str("SubQuery", "source", self.source)
        for field, argument_class in _ARGUMENT_CLASSES.items():
            value = getattr(self, field)
            if value is not None and not isinstance(value, argument_class):
                raise TypeError(
                    f"SubQuery.{field} must be {argument_class.__name__} or None, "
                    f"got {type(value).__name__}"
                )


@dataclass(frozen=True, slots=True)
class FuseOptions:
    """Engine limits; 0 or a negative value selects the default (8, 50, 4000)."""

    max_parallelism: int = 0
    max_results_per_subquery: int = 0
    budget_tokens: int = 0

    def __post_init__(self) -> None:
        for field in ("max_parallelism", "max_results_per_subquery", "budget_tokens"):
            _require_int("FuseOptions", field, getattr(self, field))


@dataclass(frozen=True, slots=True)
class FuseResult:
    evidence: tuple[Evidence, ...]
    degraded: bool
    degraded_reason: str
    budget_tokens_used: int


class GraphQueryClient(Protocol):
    """Runs one primitive. Every returned evidence carries the given tier and source, at most `limit`."""

    async def entity_state(
        self, args: EntityStateArgs, tier: Tier, source: str, limit: int
    ) -> list[Evidence]: ...

    async def predicate_walk(
        self, args: PredicateWalkArgs, tier: Tier, source: str, limit: int
    ) -> list[Evidence]: ...

    async def temporal_range(
        self, args: TemporalRangeArgs, tier: Tier, source: str, limit: int
    ) -> list[Evidence]: ...

    async def bm25(self, args: BM25Args, tier: Tier, source: str, limit: int) -> list[Evidence]: ...

    async def find(self, args: FindArgs, tier: Tier, source: str, limit: int) -> list[Evidence]: ...
