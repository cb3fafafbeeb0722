"""The prompt of an OpenAI completion or chat request, as the servers kubebench ships read it (the
reference server and the fake one of the tests); no heavy imports."""

from __future__ import annotations


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
