"""The one place where OpenAI wire objects become hexrag values (and back).

Pure functions, unit-tested without a server:

* :func:`build_messages` - ``[system?, *history, user]`` as LightRAG's OpenAI binding sends it.
* :func:`completion_text` - a chat completion's text. Content is returned verbatim (a
  ``<think>`` block or a code fence inside it is the core's business, as in LightRAG). With
  ``cot`` on (every call except JSON mode, like LightRAG's ``enable_cot=True`` query calls), a
  DeepSeek-style ``reasoning_content`` is kept only when ``content`` is blank, wrapped as
  ``<think>…</think>``.
* :class:`StreamAssembler` - the same rule for streamed deltas.
* :func:`embeddings_to_array` - the ``data`` list of an embeddings response as a float32 matrix
  in input order (by each item's ``index``; float lists or base64).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hexrag.adapters.openai._common import MalformedResponse


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """Attribute or mapping access (SDK models and plain dicts alike)."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    value = getattr(obj, name, default)
    if value is default:
        extra = getattr(obj, "model_extra", None)
        if isinstance(extra, Mapping):
            return extra.get(name, default)
    return value


def build_messages(
    prompt: str,
    system_prompt: str | None = None,
    history: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """``[system?, *history, user]``; an empty system prompt is left out (as LightRAG does)."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    for message in history:
        if isinstance(message, Mapping):
            messages.append(dict(message))
        else:  # a ChatMessage-like object
            messages.append({"role": message.role, "content": message.content})
    messages.append({"role": "user", "content": prompt})
    return messages


def completion_text(response: Any, *, cot: bool) -> str:
    """The text of a non-streamed chat completion (see the module docstring)."""
    choices = _get(response, "choices")
    if isinstance(response, (str, bytes)) or not choices:
        raise MalformedResponse(f"no choices in the response ({_preview(response)})")
    message = _get(choices[0], "message")
    if message is None:
        raise MalformedResponse("the first choice has no message")
    content = _get(message, "content")
    if content is not None and not isinstance(content, str):
        raise MalformedResponse(f"message content is a {type(content).__name__}, not text")
    reasoning = _get(message, "reasoning_content")
    if cot and isinstance(reasoning, str) and reasoning.strip() and not (content or "").strip():
        return f"<think>{reasoning}</think>{content or ''}"
    return content or ""


def delta_parts(chunk: Any) -> tuple[str | None, str | None]:
    """``(content, reasoning_content)`` of a streamed chunk's first choice (None when absent)."""
    choices = _get(chunk, "choices")
    if not choices:
        return None, None  # e.g. a usage-only or content-filter chunk
    delta = _get(choices[0], "delta")
    if delta is None:
        return None, None
    content = _get(delta, "content")
    reasoning = _get(delta, "reasoning_content")
    return (
        content if isinstance(content, str) else None,
        reasoning if isinstance(reasoning, str) else None,
    )


class StreamAssembler:
    """Turns streamed deltas into text pieces, wrapping leading reasoning in ``<think>``.

    Reasoning is shown only before the first content piece and only with ``cot``; once
    content starts, an open ``<think>`` is closed and later reasoning is dropped. Empty
    pieces are never emitted.
    """

    def __init__(self, *, cot: bool = True) -> None:
        self._cot = cot
        self._content_seen = False
        self._think_open = False
        self._think_done = False

    def feed(self, content: str | None, reasoning: str | None) -> list[str]:
        """The pieces to emit for one delta."""
        out: list[str] = []
        if content:
            self._content_seen = True
            if self._think_open:
                out.append("</think>")
                self._think_open = False
                self._think_done = True
            out.append(content)
        elif reasoning and self._cot and not self._content_seen and not self._think_done:
            if not self._think_open:
                out.append("<think>")
                self._think_open = True
            out.append(reasoning)
        return out

    def finish(self) -> list[str]:
        """The pieces to emit when the stream ends (closes an open ``<think>``)."""
        if self._think_open:
            self._think_open = False
            self._think_done = True
            return ["</think>"]
        return []


def embeddings_to_array(data: Any, n: int) -> np.ndarray:
    """Rows of an embeddings response in input order, as a float32 ``(n, dim)`` array.

    Items are placed by their ``index`` (position when absent). A count mismatch, a
    duplicate or out-of-range index, ragged rows or non-finite values raise
    :class:`MalformedResponse`.
    """
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence):
        raise MalformedResponse(f"embeddings 'data' is not a list ({_preview(data)})")
    if len(data) != n:
        raise MalformedResponse(f"asked for {n} embeddings, got {len(data)}")
    rows: list[np.ndarray | None] = [None] * n
    for pos, item in enumerate(data):
        index = _get(item, "index")
        if index is None:
            index = pos
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise MalformedResponse(f"embedding index {index!r} out of range 0..{n - 1}")
        if rows[index] is not None:
            raise MalformedResponse(f"embedding index {index} returned twice")
        rows[index] = _vector(_get(item, "embedding"))
    dims = {row.shape[0] for row in rows if row is not None}
    if len(dims) != 1:
        raise MalformedResponse(f"embeddings of different lengths {sorted(dims)}")
    matrix = np.stack([row for row in rows if row is not None]).astype(np.float32, copy=False)
    if not np.isfinite(matrix).all():
        raise MalformedResponse("embeddings contain NaN or infinite values")
    return matrix


def _vector(embedding: Any) -> np.ndarray:
    if isinstance(embedding, str):
        try:
            raw = base64.b64decode(embedding, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise MalformedResponse("embedding is neither a float list nor base64") from exc
        if not raw or len(raw) % 4:
            raise MalformedResponse("base64 embedding is not a whole number of float32 values")
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if isinstance(embedding, Sequence) and embedding and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in embedding
    ):
        return np.asarray(embedding, dtype=np.float32)
    raise MalformedResponse(f"embedding is not a non-empty float list ({_preview(embedding)})")


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
