"""Canned OpenAI chat-completion replies for the stub server in tests/http_stub.py."""

from __future__ import annotations


def chat_reply(content: str) -> tuple[int, dict]:
    return 200, {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
