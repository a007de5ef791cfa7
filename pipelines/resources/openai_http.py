"""What every OpenAI-compatible endpoint client shares: the key from the environment and a retried POST.

The embedder and the chat client (extraction, summaries) both call these, so authentication and
retry behaviour are the same wherever Lanegraph talks to a model server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import httpx

from pipelines.errors import ConfigError, LanegraphError

RETRY_DELAYS_SECONDS = (0.5, 2.0)


def json_headers(api_key_env: str | None, endpoint: str, setting: str) -> dict[str, str]:
    """Request headers; the key comes only from the environment so it never lands in a file or log.

    `setting` names the lanes.yaml key that chooses the variable, for the error message.
    """
    headers = {"Content-Type": "application/json"}
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ConfigError(
                f"environment variable {api_key_env} is not set; the endpoint {endpoint} needs its "
                f"API key there (set {setting} to an empty value for an endpoint without authentication)"
            )
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def post_json(
    client: httpx.Client,
    endpoint: str,
    body: dict,
    *,
    error: type[LanegraphError],
    describe: str,
    retry_delays_seconds: Sequence[float] = RETRY_DELAYS_SECONDS,
) -> dict:
    """POST `body` and return the JSON answer, retrying rate limits, server errors and dropped
    connections; any other 4xx is our request or key and fails at once. `describe` completes the
    error message ("for model X")."""
    failure = ""
    attempt = 0
    for attempt, delay in enumerate((*retry_delays_seconds, None), start=1):  # noqa: B007 (reported after the loop)
        try:
            response = client.post(endpoint, json=body)
        except (httpx.TimeoutException, httpx.TransportError) as transport_error:
            failure = f"{type(transport_error).__name__}: {transport_error}"
        else:
            if response.status_code < 400:
                try:
                    return response.json()
                except ValueError as invalid:
                    raise error(f"endpoint {endpoint} answered with invalid JSON: {invalid}") from None
            failure = f"HTTP {response.status_code}: {response.text[:200]!r}"
            if response.status_code != 429 and response.status_code < 500:
                break
        if delay is None:
            break
        time.sleep(delay)
    raise error(f"endpoint {endpoint} failed after {attempt} attempt(s) {describe}: {failure}")
