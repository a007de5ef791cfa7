"""Fusion engine: fan typed sub-queries out to a GraphQueryClient and fuse the evidence deterministically."""

from pipelines.fusion.engine import fuse
from pipelines.fusion.models import (
    BM25Args,
    EntityStateArgs,
    Evidence,
    FindArgs,
    FuseOptions,
    FuseResult,
    GraphQueryClient,
    PredicateWalkArgs,
    SubQuery,
    TemporalRangeArgs,
)

__all__ = [
    "fuse",
    "FuseOptions",
    "FuseResult",
    "SubQuery",
    "Evidence",
    "EntityStateArgs",
    "PredicateWalkArgs",
    "TemporalRangeArgs",
    "BM25Args",
    "FindArgs",
    "GraphQueryClient",
]
