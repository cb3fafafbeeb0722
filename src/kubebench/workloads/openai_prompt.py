"""The prompt of an OpenAI completion or chat request, as the servers kubebench ships read it (the
reference server and the fake one of the tests); no heavy imports."""

from __future__ import annotations

import json

#: Bytes of a request's body (aiohttp's default, named): a larger one is answered 413.
MAX_BODY_BYTES = 1_048_576


def read_body(data: bytes) -> dict:
    """A request's JSON object; ValueError for anything else: not JSON, not UTF-8, ``Infinity`` or
    ``NaN`` (which Python's parser reads but JSON has not), nested too deep for Python's parser."""
    try:
        body = json.loads(data, parse_constant=_not_json)
    except RecursionError as e:
        raise ValueError("the body is nested too deep") from e
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


def _not_json(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def max_tokens_of(body: dict, default: int = 16) -> int:
    """``max_tokens`` (or ``max_completion_tokens``): a whole number; TypeError for anything else."""
    value = body.get("max_tokens", body.get("max_completion_tokens"))
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("max_tokens must be a whole number")
    return value


def include_usage(body: dict) -> bool:
    """Whether the stream should end with usage (``stream_options.include_usage``)."""
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise TypeError("stream_options must be an object")
    return bool(options.get("include_usage"))


def prompt_of(body: dict, chat: bool) -> str | list[int]:
    """``messages`` of a chat request, else ``prompt``; ``ValueError``/``TypeError``/``KeyError`` say what
    is malformed (a 400 for the caller)."""
    return chat_prompt(body["messages"]) if chat else completion_prompt(body["prompt"])


def completion_prompt(prompt: object) -> str | list[int]:
    """Text, token ids, or a batch of texts (served as one)."""
    if isinstance(prompt, str) or (isinstance(prompt, list) and all(type(t) is int for t in prompt)):
        return prompt
    if isinstance(prompt, list) and all(isinstance(t, str) for t in prompt):
        return " ".join(prompt)
    raise TypeError("prompt must be a string, a list of strings or a list of token ids")


def chat_prompt(messages: object) -> str:
    """The text of every message, in order; a content is a string or a list of text parts (OpenAI's
    form, which GuideLLM sends)."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    texts = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            for part in content:
                if not isinstance(part, dict) or part.get("type") != "text":
                    kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                    raise ValueError(f"only text content parts are served, not {kind!r}")
                texts.append(str(part["text"]))
        elif isinstance(content, str):
            texts.append(content)
        else:
            raise TypeError("a message's content must be a string or a list of text parts")
    return " ".join(texts)
