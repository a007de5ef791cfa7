"""One client for OpenAI-compatible chat endpoints (`POST {base_url}/chat/completions`).

The extractor and the summarizer both use it; structured answers are requested with
`response_format: {"type": "json_schema", ...}` and parsed here, so a malformed answer is one clear
error wherever it happens. The API key is read from the named environment variable only.
"""

from __future__ import annotations

import json
from typing import Any

import dagster as dg
import httpx

from pipelines.config import HttpEndpoint
from pipelines.errors import ConfigError, LanegraphError
from pipelines.resources.openai_http import RETRY_DELAYS_SECONDS, json_headers, post_json


class LLMError(LanegraphError):
    """A chat endpoint failed or answered with something other than what was asked for."""


class ChatClient:
    """Chat completions with retries on rate limits, server errors and dropped connections."""

    retry_delays_seconds = RETRY_DELAYS_SECONDS

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0) -> None:
        if not base_url or not model:
            raise ConfigError("an LLM endpoint needs both llm.base_url and llm.model in lanes.yaml")
        self.endpoint = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = timeout
        self._headers = json_headers(api_key_env, self.endpoint, "llm.api_key_env")

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
        with httpx.Client(timeout=self.timeout, headers=self._headers) as client:
            return post_json(
                client, self.endpoint, body, error=LLMError, describe=f"for model {self.model}",
                retry_delays_seconds=self.retry_delays_seconds,
            )

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


class ChatEndpointResource(dg.ConfigurableResource):
    """The fields of a resource that may ask a chat endpoint (the extractor's and the summarizer's
    `llm:` in lanes.yaml), and the client they make."""

    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key_env: str = "OPENAI_API_KEY"
    llm_timeout_seconds: float = 60.0

    @staticmethod
    def endpoint_fields(llm: HttpEndpoint) -> dict[str, Any]:
        """lanes.yaml's `llm:` settings as this resource's fields."""
        return {
            "llm_base_url": llm.base_url,
            "llm_model": llm.model,
            "llm_api_key_env": llm.api_key_env,
            "llm_timeout_seconds": llm.timeout_seconds,
        }

    def chat_client(self) -> ChatClient:
        return ChatClient(self.llm_base_url, self.llm_model, self.llm_api_key_env, self.llm_timeout_seconds)
