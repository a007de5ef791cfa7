import hashlib

import numpy as np
import pytest

from pipelines.resources.embedder import (
    EmbedderResource,
    EmbeddingError,
    LocalMiniLMEmbedder,
    OpenAICompatibleEmbedder,
    cpu_multiplies_bfloat16,
    fixed_shape_passes,
)
from pipelines.errors import ConfigError, LanegraphError
from tests.http_stub import StubServer

SERVER_DIMENSION = 16
API_KEY_ENV = "LANEGRAPH_TEST_EMBEDDING_KEY"


def hashed_vector(text: str, dimension: int = SERVER_DIMENSION) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return np.random.default_rng(seed).normal(size=dimension).tolist()


def unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)


class FakeEmbeddingServer(StubServer):
    """Speaks OpenAI's /embeddings with hashed vectors; can fail first or answer out of order."""

    def __init__(self) -> None:
        self.failures_before_success: list[int] = []
        self.dimension = SERVER_DIMENSION
        self.reverse_order = False
        super().__init__(self._embeddings)

    def _embeddings(self, body: dict) -> tuple[int, dict]:
        if self.failures_before_success:
            return self.failures_before_success.pop(0), {"error": "overloaded"}
        data = [
            {"object": "embedding", "index": index, "embedding": hashed_vector(text, self.dimension)}
            for index, text in enumerate(body["input"])
        ]
        if self.reverse_order:
            data.reverse()
        return 200, {"object": "list", "model": body["model"], "data": data}


@pytest.fixture
def server():
    fake = FakeEmbeddingServer()
    yield fake
    fake.close()


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv(API_KEY_ENV, "sk-test-123")
    return "sk-test-123"


def remote_embedder(server: FakeEmbeddingServer, batch_size: int = 64) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(
        base_url=server.base_url,
        model="test-embed",
        dimension=SERVER_DIMENSION,
        api_key_env=API_KEY_ENV,
        batch_size=batch_size,
        timeout=5,
    )


# bfloat16 is tried only where the CPU multiplies it: elsewhere torch emulates it, slowly.
PRECISIONS = ["float32", "bfloat16"] if cpu_multiplies_bfloat16() else ["float32"]
# How far passes of other shapes may round apart: float32's last bits, or bfloat16's products.
ROUNDING = {"float32": 1e-5, "bfloat16": 2e-3}


@pytest.fixture(scope="module", params=PRECISIONS)
def local_embedder(request):
    return LocalMiniLMEmbedder(batch_size=4, precision=request.param)


def test_local_embedder_returns_float32_unit_rows_of_384(local_embedder):
    texts = [f"passage number {i} about rivers" for i in range(6)]

    vectors = local_embedder.embed(texts)

    assert vectors.shape == (6, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local_embedder.dimension == 384
    assert local_embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"


def test_local_embedder_puts_similar_sentences_closer_than_unrelated(local_embedder):
    cat, kitten, tax = local_embedder.embed(
        ["A cat is sleeping on the sofa.", "A kitten naps on the couch.", "The tax return is due in April."]
    )

    assert cat @ kitten > cat @ tax + 0.3


def test_local_embedder_result_does_not_depend_on_batching(local_embedder):
    texts = ["Paris is the capital of France.", "Berlin is in Germany.", "Rome", "Madrid", "Lisbon"]

    np.testing.assert_allclose(
        local_embedder.embed(texts),
        LocalMiniLMEmbedder(batch_size=64, precision=local_embedder.precision).embed(texts),
        atol=ROUNDING[local_embedder.precision],
    )


def test_local_embedder_vector_depends_on_the_text_alone_bit_for_bit(local_embedder):
    # What lets an incremental rebuild equal a full one: the same text, whatever shares its call.
    texts = [
        "Paris is the capital of France and its largest city by far.", "Rome", "Berlin is in Germany.",
        "Lisbon", "Madrid is the capital of Spain.", "Oslo", "Helsinki", "Tallinn is on the Gulf of Finland.",
    ]
    together = local_embedder.embed(texts)
    for position, text in enumerate(texts):
        assert np.array_equal(local_embedder.embed([text])[0], together[position]), text
    assert np.array_equal(local_embedder.embed(texts[::-1]), together[::-1])


def test_local_embedder_result_does_not_depend_on_the_token_bound(local_embedder):
    texts = ["Paris is the capital of France and its largest city by far.", "Rome", "Berlin is in Germany."]

    np.testing.assert_allclose(
        LocalMiniLMEmbedder(batch_tokens=1, precision=local_embedder.precision).embed(texts),
        local_embedder.embed(texts),
        atol=ROUNDING[local_embedder.precision],
    )


def test_question_vectors_are_the_text_vectors_within_rounding(local_embedder):
    questions = ["Who leads the firmware team?", "Which city is the capital of France and why is it so large?"]

    np.testing.assert_allclose(
        local_embedder.embed_questions(questions), local_embedder.embed(questions), atol=ROUNDING[local_embedder.precision]
    )
    assert local_embedder.embed_questions([]).shape == (0, 384)


@pytest.mark.skipif(not cpu_multiplies_bfloat16(), reason="this CPU has no bfloat16 matrix instructions")
def test_bfloat16_vectors_point_where_float32_ones_do():
    texts = [
        "Paris is the capital of France and its largest city by far.", "Rome",
        "The Federal Bureau of Investigation (FBI) was founded in 1908 as the Bureau of Investigation.",
    ]
    cosines = np.sum(
        LocalMiniLMEmbedder(precision="bfloat16").embed(texts) * LocalMiniLMEmbedder(precision="float32").embed(texts), axis=1
    )

    assert cosines.min() > 0.9999


def test_auto_precision_is_bfloat16_exactly_where_the_cpu_multiplies_it():
    expected = "bfloat16" if cpu_multiplies_bfloat16() else "float32"

    assert LocalMiniLMEmbedder().precision == expected
    assert LocalMiniLMEmbedder(precision="float32").precision == "float32"


def test_fixed_shape_passes_group_texts_by_width_with_fixed_rows():
    passes = fixed_shape_passes([3, 200, 7, 30, 5, 300], max_width=256, max_texts=2, max_tokens=1024)

    assert [(p.positions, p.rows, p.width) for p in passes] == [
        ([5], 2, 256),
        ([1], 2, 224),
        ([3], 2, 32),
        ([0, 2], 2, 8),
        ([4], 2, 8),
    ]
    assert [p.rows for p in fixed_shape_passes([100, 10], max_width=256, max_texts=64, max_tokens=1024)] == [9, 64]
    assert [p.rows for p in fixed_shape_passes([256], max_width=256, max_texts=64, max_tokens=100)] == [1]
    assert fixed_shape_passes([], max_width=256, max_texts=8, max_tokens=1024) == []


def test_empty_input_gives_zero_rows(local_embedder, server, api_key):
    assert local_embedder.embed([]).shape == (0, 384)
    assert remote_embedder(server).embed([]).shape == (0, SERVER_DIMENSION)
    assert server.requests == []


def test_single_string_is_rejected(local_embedder):
    with pytest.raises(TypeError, match="not a single string"):
        local_embedder.embed("a whole sentence")


def test_remote_request_shape_key_and_batching(server, api_key):
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]

    vectors = remote_embedder(server, batch_size=2).embed(texts)

    assert [request["path"] for request in server.requests] == ["/v1/embeddings"] * 3
    assert [request["body"] for request in server.requests] == [
        {"model": "test-embed", "input": ["alpha", "beta"]},
        {"model": "test-embed", "input": ["gamma", "delta"]},
        {"model": "test-embed", "input": ["epsilon"]},
    ]
    assert all(request["headers"]["Authorization"] == f"Bearer {api_key}" for request in server.requests)
    assert vectors.shape == (5, SERVER_DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_remote_rows_follow_the_index_not_the_response_order(server, api_key):
    server.reverse_order = True
    texts = ["first", "second", "third"]

    vectors = remote_embedder(server).embed(texts)

    np.testing.assert_allclose(vectors, np.stack([unit(hashed_vector(text)) for text in texts]), atol=1e-6)


def test_remote_retries_a_server_error_then_succeeds(server, api_key):
    server.failures_before_success = [500]

    vectors = remote_embedder(server).embed(["retry me"])

    assert len(server.requests) == 2
    np.testing.assert_allclose(vectors[0], unit(hashed_vector("retry me")), atol=1e-6)


def test_remote_gives_up_after_repeated_server_errors(server, api_key):
    server.failures_before_success = [503, 503, 503, 503]
    embedder = remote_embedder(server)
    embedder.retry_delays_seconds = (0, 0)

    with pytest.raises(EmbeddingError, match=r"/v1/embeddings failed after 3 attempt\(s\).*HTTP 503"):
        embedder.embed(["never"])
    assert len(server.requests) == 3


def test_remote_does_not_retry_a_rejected_request(server, api_key):
    server.failures_before_success = [401]

    with pytest.raises(EmbeddingError, match="HTTP 401"):
        remote_embedder(server).embed(["no entry"])
    assert len(server.requests) == 1


def test_remote_dimension_mismatch_names_endpoint_and_both_sizes(server, api_key):
    server.dimension = 8

    with pytest.raises(EmbeddingError) as raised:
        remote_embedder(server).embed(["short vector"])

    message = str(raised.value)
    assert f"{server.base_url}/embeddings" in message
    assert "8-dimensional" in message
    assert f"pipeline.embedding.dimension is {SERVER_DIMENSION}" in message
    assert isinstance(raised.value, LanegraphError)


def test_remote_unreachable_endpoint_is_an_embedding_error(api_key):
    embedder = OpenAICompatibleEmbedder(
        base_url="http://127.0.0.1:9", model="m", dimension=4, api_key_env=API_KEY_ENV, timeout=1
    )
    embedder.retry_delays_seconds = (0, 0)

    with pytest.raises(EmbeddingError, match="127.0.0.1:9/embeddings failed after 3 attempt"):
        embedder.embed(["x"])


def test_missing_api_key_variable_is_named(server, monkeypatch):
    monkeypatch.delenv(API_KEY_ENV, raising=False)

    with pytest.raises(ConfigError, match=API_KEY_ENV):
        remote_embedder(server)


def test_resource_builds_the_local_embedder_by_default():
    embedder = EmbedderResource(batch_size=16).get_embedder()

    assert isinstance(embedder, LocalMiniLMEmbedder)
    assert embedder.batch_size == 16
    assert EmbedderResource(precision="float32").get_embedder().precision == "float32"


def test_resource_rejects_a_local_dimension_other_than_384():
    with pytest.raises(ConfigError, match="set pipeline.embedding.dimension to 384 or choose provider openai"):
        EmbedderResource(dimension=768).get_embedder()


def test_resource_openai_provider_needs_base_url_and_model():
    with pytest.raises(ConfigError, match="pipeline.embedding.base_url and pipeline.embedding.model"):
        EmbedderResource(provider="openai", dimension=SERVER_DIMENSION).get_embedder()


def test_resource_openai_provider_embeds_through_the_endpoint(server, api_key):
    resource = EmbedderResource(
        provider="openai",
        base_url=server.base_url,
        model="test-embed",
        api_key_env=API_KEY_ENV,
        dimension=SERVER_DIMENSION,
    )

    vectors = resource.get_embedder().embed(["via the resource"])

    assert vectors.shape == (1, SERVER_DIMENSION)
    assert server.requests[0]["body"]["model"] == "test-embed"
