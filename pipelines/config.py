"""lanes.yaml: the one settings file, declared once as typed models and loaded strictly.

The `pipeline` section configures the write side (embedding, chunking, extraction, clustering,
summaries); the retrieval sections configure the find statement. Both sides read the same file, so
the vector width the schema uses and the width the compiled statement binds cannot drift apart.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Literal

import pydantic
from pydantic import Field

from pipelines import lanes_config
from pipelines.shipped import DEFAULT_LANES
from pipelines.strict_yaml import StrictModel, read_settings_text, validated_yaml


def default_config_path() -> Path:
    """LANEGRAPH_CONFIG, else a lanes.yaml in the working directory, else the shipped default."""
    if os.environ.get("LANEGRAPH_CONFIG"):
        return Path(os.environ["LANEGRAPH_CONFIG"])
    local = Path("lanes.yaml")
    return local if local.is_file() else DEFAULT_LANES


def data_dir() -> Path:
    """Where the embedded database, the inbox and run artefacts live: `./data`, or LANEGRAPH_DATA_DIR."""
    return Path(os.environ.get("LANEGRAPH_DATA_DIR", "data")).resolve()


class HttpEndpoint(StrictModel):
    """An OpenAI-compatible endpoint; the key is read from the named environment variable only."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: float = Field(default=60.0, gt=0)


EmbeddingPrecision = Literal["auto", "float32", "bfloat16"]


class EmbeddingSettings(StrictModel):
    provider: Literal["local", "openai"] = "local"
    dimension: int = Field(default=384, ge=1, le=16000)
    batch_size: int = Field(default=64, ge=1, le=4096)
    # At most this many tokens (texts times their padded width) in one forward pass of the bundled
    # model, under batch_size texts: past it the activations outgrow the CPU's caches, and 64 chunks
    # a pass run about 20% slower than the same chunks 1,024 tokens at a time (docs/benchmarks.md, the embedder).
    batch_tokens: int = Field(default=1024, ge=16, le=1_048_576)
    # local: the number format of the model's matrix products while it embeds chunks, facts,
    # entities and summaries. bfloat16 runs the build's passes 1.7 to 2.4 times as fast on a CPU
    # that multiplies it natively (AMX or AVX-512 BF16), at cosine 0.99999 to float32
    # (docs/benchmarks.md, the embedder), and slower on one that does not; auto picks it where the CPU has it.
    precision: EmbeddingPrecision = "auto"
    openai: HttpEndpoint = HttpEndpoint()


class DocumentSettings(StrictModel):
    # A source file (or one JSONL record) above this size is skipped with a reason: 10 MB of text is
    # about 10,000 chunks, already minutes of embedding on two cores.
    max_bytes: int = Field(default=10_000_000, ge=1)
    # Documents written per transaction: one commit per batch instead of one per document (a commit
    # waits for a disk flush); a batch that fails is retried document by document.
    batch_size: int = Field(default=500, ge=1, le=100_000)


class ChunkingSettings(StrictModel):
    max_tokens: int = Field(default=200, ge=16, le=8192)
    overlap_tokens: int = Field(default=40, ge=0)

    @pydantic.model_validator(mode="after")
    def _overlap_below_window(self) -> ChunkingSettings:
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError("overlap_tokens must be smaller than max_tokens")
        return self


class ExtractionSettings(StrictModel):
    provider: Literal["spacy", "rules", "llm"] = "spacy"
    # Entities whose normalised names are at least this similar (trigram) and share a type merge.
    merge_similarity: float = Field(default=0.9, gt=0, le=1)
    llm: HttpEndpoint = HttpEndpoint()


class CommunitySettings(StrictModel):
    max_size: int = Field(default=40, ge=2)
    resolution: float = Field(default=1.0, gt=0)
    max_levels: int = Field(default=3, ge=1, le=10)
    seed: int = 42


class ProfileSettings(StrictModel):
    min_degree: int = Field(default=2, ge=1)


class RaptorSettings(StrictModel):
    max_levels: int = Field(default=4, ge=1, le=10)
    root_count: int = Field(default=3, ge=1)
    reduced_dimensions: int = Field(default=10, ge=2)
    max_clusters: int = Field(default=50, ge=2)
    # Tied: one covariance shared by all components. Full covariances cost so many parameters
    # per component that BIC picks one or two clusters for a small corpus (measured on the demo:
    # 2 clusters of 72 chunks with full, 10 with tied).
    covariance: Literal["full", "tied", "diag", "spherical"] = "tied"
    seed: int = 42


class SummarySettings(StrictModel):
    provider: Literal["extractive", "llm"] = "extractive"
    max_chars: int = Field(default=600, ge=80)
    llm: HttpEndpoint = HttpEndpoint()


class SessionSettings(StrictModel):
    promote_after_hours: float = Field(default=24.0, ge=0)


class PipelineSettings(StrictModel):
    embedding: EmbeddingSettings = EmbeddingSettings()
    documents: DocumentSettings = DocumentSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    extraction: ExtractionSettings = ExtractionSettings()
    communities: CommunitySettings = CommunitySettings()
    profiles: ProfileSettings = ProfileSettings()
    raptor: RaptorSettings = RaptorSettings()
    summaries: SummarySettings = SummarySettings()
    session: SessionSettings = SessionSettings()


class ServeSettings(StrictModel):
    """`lanegraph serve`: where it listens and what one request may ask of it."""

    # Loopback by default: a server reachable from elsewhere is a deliberate choice (--host).
    host: str = "127.0.0.1"
    port: int = Field(default=8710, ge=0, le=65535)
    # Connections to the primary: owner connections (tokens, readiness) and, as many again at most,
    # confined ones kept per caller's scopes; each read server gets the same. Find holds one for a
    # statement's length, so this bounds the finds the database runs at once.
    pool_size: int = Field(default=8, ge=1, le=1000)
    # A request still running after this many seconds is answered 504, and its statement cancelled
    # by the server (statement_timeout).
    request_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    # A body above this is refused (413) before it is read whole.
    max_request_bytes: int = Field(default=1_000_000, ge=1024)
    # A working-memory item is a turn or a note, not a document (POST /documents takes those).
    max_memory_chars: int = Field(default=20_000, ge=1)
    # Questions of concurrent finds embedded together in one pass at most: those that arrive while
    # another pass runs wait for it and share the next. 1 embeds every request's question alone.
    question_batch: int = Field(default=32, ge=1, le=256)


class LanegraphConfig(StrictModel):
    version: Literal[1]
    pipeline: PipelineSettings = PipelineSettings()
    serve: ServeSettings = ServeSettings()
    plan: lanes_config.Plan = lanes_config.Plan()
    settings: lanes_config.Settings = lanes_config.Settings()
    lanes: dict[str, lanes_config.Lane] = Field(default_factory=lambda: dict(lanes_config.STANDARD_LANES))

    @pydantic.model_validator(mode="after")
    def _plan_orders_every_lane(self) -> LanegraphConfig:
        lanes_config.check_plan_names_lanes(self.plan, self.lanes)
        return self


def load_config(path: Path | None = None) -> LanegraphConfig:
    """Load and validate lanes.yaml; every problem names the file, line and key."""
    path = path or default_config_path()
    return _validated_config(str(path), read_settings_text(path))


# Every asset's run config takes its defaults from lanes.yaml, so one write run reads the file a
# dozen times or more, and parsing it is what costs (18 ms). The file is read each time; the same
# text gives back the same validated settings, which are frozen models.
@functools.lru_cache(maxsize=16)
def _validated_config(source: str, text: str) -> LanegraphConfig:
    return validated_yaml(LanegraphConfig, text, source)

