"""One client for OpenAI-compatible chat endpoints (`POST {base_url}/chat/completions`).

The extractor and the summarizer both use it; structured answers are requested with
`response_format: {"type": "json_schema", ...}` and parsed here, so a malformed answer is one clear
error wherever it happens. The API key is read from the named environment variable only.
"""

from __future__ import annotations

import json
import os
import time

import httpx

from pipelines.resources.errors import ConfigError, LanegraphError


class LLMError(LanegraphError):
    """A chat endpoint failed or answered with something other than what was asked for."""


class ChatClient:
    """Chat completions with retries on rate limits, server errors and dropped connections."""

    retry_delays_seconds = (0.5, 2.0)

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0) -> None:
        if not base_url or not model:
            raise ConfigError("an LLM endpoint needs both llm.base_url and llm.model in lanes.yaml")
        self.endpoint = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = timeout
        self._headers = {"Content-Type": "application/json"}
        if api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise ConfigError(
                    f"environment variable {api_key_env} is not set; the chat endpoint {self.endpoint} "
                    "needs its API key there (set llm.api_key_env to an empty string for an endpoint "
                    "without authentication)"
                )
            self._headers["Authorization"] = f"Bearer {api_key}"

    def complete(self, system: str, user: str, *, max_tokens: int | None = None) -> str:
        """The assistant's text answer to one system + user exchange."""
        return self._content(self._request(system, user, max_tokens=max_tokens))

    def complete_json(self, system: str, user: str, *, schema_name: str, schema: dict) -> dict:
        """An answer constrained to `schema` (strict JSON-schema output), parsed."""
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "schema": schema, "strict": True},
        }
        content = self._content(self._request(system, user, response_format=response_format))
        try:
            parsed = json.loads(content)
        except ValueError as error:
            raise LLMError(f"chat endpoint {self.endpoint} answered {schema_name} with invalid JSON: {error}") from None
        if not isinstance(parsed, dict):
            raise LLMError(f"chat endpoint {self.endpoint} answered {schema_name} with a {type(parsed).__name__}, not an object")
        return parsed

    def _request(self, system: str, user: str, **options: object) -> dict:
        body: dict = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
        }
        body.update({key: value for key, value in options.items() if value is not None})
        failure = ""
        with httpx.Client(timeout=self.timeout, headers=self._headers) as client:
            for attempt, delay in enumerate((*self.retry_delays_seconds, None), start=1):
                try:
                    response = client.post(self.endpoint, json=body)
                except (httpx.TimeoutException, httpx.TransportError) as error:
                    failure = f"{type(error).__name__}: {error}"
                else:
                    if response.status_code < 400:
                        try:
                            return response.json()
                        except ValueError as error:
                            raise LLMError(f"chat endpoint {self.endpoint} answered with invalid JSON: {error}") from None
                    failure = f"HTTP {response.status_code}: {response.text[:200]!r}"
                    # Rate limits and server errors pass; any other 4xx is our request or key.
                    if response.status_code != 429 and response.status_code < 500:
                        break
                if delay is None:
                    break
                time.sleep(delay)
        raise LLMError(f"chat endpoint {self.endpoint} failed after {attempt} attempt(s) for model {self.model}: {failure}")

    def _content(self, payload: dict) -> str:
        try:
            message = payload["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"chat endpoint {self.endpoint} answered without choices[0].message") from None
        if message.get("refusal"):
            raise LLMError(f"chat endpoint {self.endpoint} refused: {str(message['refusal'])[:200]}")
        content = message.get("content")
        if not isinstance(content, str):
            raise LLMError(f"chat endpoint {self.endpoint} answered without text content")
        return content
