"""A deterministic stand-in for an extraction LLM (tests, demos): answers LightRAG's
extraction, gleaning and summary prompts from the prompt text alone.

* extraction (a system prompt and the ``---Input Text---`` block): the first eight distinct
  capitalised words of the chunk become ``concept`` entities, neighbours become relations;
* gleaning (a system prompt and history): the first entity again, with a longer description;
* anything else (description summaries): ``Summary <md5 of the prompt>``.

:func:`kg_reply` is the function; :class:`ScriptedKGLLM` wraps it as an
:class:`~hexrag.ports.LLM` (counting its calls); :func:`chat_responder` adapts it to
:class:`hexrag.devtools.scripted_openai.ScriptedOpenAIServer`'s chat route.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hexrag.core.ingest.extraction_prompts import COMPLETION_DELIMITER, TUPLE_DELIMITER

__all__ = ["ReplyLLM", "ScriptedKGLLM", "chat_responder", "kg_reply", "split_chat"]

D = TUPLE_DELIMITER
_WORD = re.compile(r"\b[A-Z][a-zA-Z]+\b")


def _input_text(prompt: str) -> str:
    m = re.search(r"---Input Text---\n```\n(.*?)\n```", prompt, re.S)
    return m.group(1) if m else ""


def kg_reply(prompt: str, system: str | None, history: Sequence[Mapping[str, Any]]) -> str:
    """The scripted answer to one LLM call (see the module docstring)."""
    if system and history:
        text = _input_text(str(history[0].get("content", "")))
        words = list(dict.fromkeys(_WORD.findall(text)))
        if not words:
            return COMPLETION_DELIMITER
        w = words[0]
        return (f"entity{D}{w}{D}concept{D}{w} is described at length in: {text[:60]}\n"
                f"{COMPLETION_DELIMITER}")
    if system:
        text = _input_text(prompt)
        words = list(dict.fromkeys(_WORD.findall(text)))[:8]
        lines = [f"entity{D}{w}{D}concept{D}{w} appears in: {text[:30]}" for w in words]
        lines += [f"relation{D}{a}{D}{b}{D}co-occurs, text{D}{a} and {b} appear together"
                  for a, b in itertools.pairwise(words)]
        return "\n".join([*lines, COMPLETION_DELIMITER])
    return "Summary " + hashlib.md5(prompt.encode("utf-8")).hexdigest()[:10]


class ReplyLLM:
    """An offline ``hexrag.ports.LLM`` answering with :meth:`reply`, counting its calls
    (``model_name`` defaults to the class's ``default_name``)."""

    default_name = "reply"

    def __init__(self, model_name: str | None = None) -> None:
        self.model_name = self.default_name if model_name is None else model_name
        self.calls = 0

    def reply(self, prompt: str, system: str | None, history: Sequence[Mapping[str, Any]]) -> str:
        """The answer to one call."""
        raise NotImplementedError

    async def complete(self, prompt: str, *, system_prompt: str | None = None,
                       history: Sequence[Mapping[str, Any]] = (), json_mode: bool = False) -> str:
        """:meth:`reply` to the call, counted."""
        self.calls += 1
        return self.reply(prompt, system_prompt, history)

    async def stream(self, prompt: str, **kwargs: Any) -> Any:
        """The reply as one piece."""
        yield await self.complete(prompt, **kwargs)


class ScriptedKGLLM(ReplyLLM):
    """:func:`kg_reply` as an extraction LLM (``hexrag.ports.LLM``), counting its calls."""

    default_name = "scripted"
    reply = staticmethod(kg_reply)


def split_chat(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[str, str | None, list[Mapping[str, Any]]]:
    """OpenAI chat ``messages`` (system, history..., user) as ``(prompt, system, history)``."""
    system = None
    rest = list(messages)
    if rest and rest[0].get("role") == "system":
        system = str(rest.pop(0).get("content"))
    prompt = str(rest[-1].get("content")) if rest else ""
    return prompt, system, rest[:-1]


def chat_responder(messages: Sequence[Mapping[str, Any]]) -> str:
    """:func:`kg_reply` for OpenAI chat ``messages`` (system, history..., user)."""
    return kg_reply(*split_chat(messages))
