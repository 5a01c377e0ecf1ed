"""Strict JSON request bodies: a pure ASGI middleware in front of every JSON route.

Python's ``json`` (and so FastAPI) accepts ``NaN``, ``Infinity`` and ``-Infinity``, turns
``1e999`` into ``inf``, decodes ``"\\ud800"`` into a lone surrogate and converts integers of
any length (slowly; past 4300 digits it raises). Fields a request model does not know are
dropped unchecked, and free-form fields (``conversation_history`` extras) keep such values
until an LLM adapter fails to serialise them. :class:`StrictJsonMiddleware` parses each JSON
body once more, strictly, before the app sees it, and refuses anywhere in it - known or
unknown fields, nested or not, keys included:

* ``NaN``, ``Infinity``, ``-Infinity`` and numbers that overflow to infinity (``1e999``);
* number literals longer than :data:`MAX_NUMBER_CHARS` characters;
* strings (or keys) with a lone surrogate, or with a NUL character (every text field of the
  API already refuses NUL; now unknown fields do too).

A refusal is the app's own validation failure: 422 ``{"detail": [{"loc", "msg", "type"}]}``,
and on ``/query/data`` LightRAG's failure body with 400. The message never echoes the
offending value; for a body of at most :data:`LOCATE_MAX_BYTES` it names the place
(``body -> conversation_history -> 0 -> x``), a bigger body is checked at C speed on a worker
thread and refused at ``body`` with the kind of problem only. Anything
else is left to the app, unchanged: a body that is not JSON at all keeps FastAPI's 400, and
unknown fields that pass are still ignored by the request models, as LightRAG's are. Bodies
that are not JSON by their ``Content-Type`` (``multipart/form-data`` uploads) are not read.

The middleware sits inside the API-key and body-limit checks, so the body it reads is already
bounded by ``MAX_REQUEST_BODY_BYTES``; a JSON body longer than ``max_bytes`` (possible only on
a path with a larger limit, which takes multipart) is handed on unparsed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection
from typing import Any

from anyio import to_thread

from hexrag.api.middleware import (
    ASGIApp,
    ClientGone,
    Receive,
    Scope,
    Send,
    read_body,
    replaying,
    send_json,
)

__all__ = [
    "LOCATE_MAX_BYTES",
    "MAX_NUMBER_CHARS",
    "StrictJsonMiddleware",
    "json_body_problem",
]

#: Longest number literal accepted (digits, sign, point and exponent together).
MAX_NUMBER_CHARS = 300
#: Longest excerpt of one key shown in the location of a refusal.
_KEY_CHARS = 60
#: A NUL as ``json.dumps`` writes it: ``\u0000`` after an even number of backslashes (an
#: odd number makes it the literal text ``\u0000``).
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
#: Bodies up to this size are walked to name the place of a refusal; bigger ones are checked
#: on a worker thread (the event loop keeps serving) and refused at ``["body"]``.
LOCATE_MAX_BYTES = 64 * 1024
#: Most location parts shown (a deeper location ends with "...").
_LOC_PARTS = 12
#: LightRAG answers validation failures on these routes with 400 and its failure body.
LIGHTRAG_FAILURE_PATHS = ("/query/data",)


class _Bad:
    """A value the strict parse refused (kept in place so the walk can name its location)."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


def _constant(name: str) -> _Bad:
    return _Bad(f"{name} is not valid JSON")


def _float(text: str) -> float | _Bad:
    if len(text) > MAX_NUMBER_CHARS:
        return _Bad(f"number longer than {MAX_NUMBER_CHARS} characters")
    value = float(text)
    if not math.isfinite(value):
        return _Bad("number out of range (overflows to infinity)")
    return value


def _int(text: str) -> int | _Bad:
    if len(text) > MAX_NUMBER_CHARS:
        return _Bad(f"number longer than {MAX_NUMBER_CHARS} characters")
    return int(text)


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone surrogate (not valid Unicode)"
    return None


def _where(path: tuple[str | int, ...], key: str | int | None) -> list[str | int]:
    parts = path if key is None else (*path, key)
    shown: list[str | int] = [p if isinstance(p, int) else p[:_KEY_CHARS] for p in parts]
    if len(shown) > _LOC_PARTS:
        shown = [*shown[:_LOC_PARTS], "..."]
    return ["body", *shown]


Pairs = list[tuple[Any, Any]]


def _walk(root: Any) -> tuple[list[str | int], str] | None:
    """The first refused value of a parsed body: ``(location, message)``. Iterative; the
    strings (and the keys) of each container are checked together, joined, at C speed, and
    one by one only when the join fails; keys are checked before their values, so every key
    in a reported location is clean text."""
    pending: list[tuple[tuple[str | int, ...], Pairs]] = [((), [(None, root)])]
    while pending:
        path, pairs = pending.pop()
        texts = [v for _, v in pairs if isinstance(v, str)]
        if texts and _text_problem("".join(texts)) is not None:
            for key, value in pairs:
                problem = _text_problem(value) if isinstance(value, str) else None
                if problem:
                    return _where(path, key), f"string {problem}"
        nested: list[tuple[tuple[str | int, ...], Pairs]] = []
        for key, value in pairs:
            if isinstance(value, _Bad):
                return _where(path, key), value.why
            if isinstance(value, dict):
                keys = list(value)
                if keys and _text_problem("".join(keys)) is not None:
                    for k in keys:
                        problem = _text_problem(k)
                        if problem:
                            return _where(path, key), f"a key {problem}"
                inner: Pairs = list(value.items())
            elif isinstance(value, list):
                inner = list(enumerate(value))
            else:
                continue
            nested.append((path if key is None else (*path, key), inner))
        pending.extend(reversed(nested))
    return None


def json_body_problem(body: bytes) -> tuple[list[str | int], str] | None:
    """Why ``body`` is refused as strict JSON: ``(location, message)``, or ``None`` when it
    passes - and also when it is not JSON at all (the app's parser reports that).

    At C speed: the strict parse flags refused numbers, then the parsed body is dumped again
    and encoded as UTF-8 (a lone surrogate anywhere fails it) and searched for an escaped NUL.
    Only a refused body of at most :data:`LOCATE_MAX_BYTES` is walked in Python to name the
    place; a bigger one is refused at ``["body"]`` with the kind of problem, so no body costs
    a Python-speed walk of a megabyte."""
    refused: list[_Bad] = []

    def constant(name: str) -> _Bad:
        refused.append(_constant(name))
        return refused[-1]

    def number(parse: Callable[[str], Any]) -> Callable[[str], Any]:
        def checked(text: str) -> Any:
            value = parse(text)
            if isinstance(value, _Bad):
                refused.append(value)
            return value

        return checked

    try:
        parsed = json.loads(
            body, parse_constant=constant, parse_float=number(_float), parse_int=number(_int)
        )
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError: the app's 400
        return None
    if refused:
        problem = refused[0].why
    else:
        try:
            text = json.dumps(parsed, ensure_ascii=False)
        except (ValueError, RecursionError):
            return _walk(parsed)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            problem = "a string or key contains a lone surrogate (not valid Unicode)"
        else:
            if _ESCAPED_NUL.search(text) is None:
                return None
            problem = "a string or key contains a NUL character"
    if len(body) > LOCATE_MAX_BYTES:
        return ["body"], problem
    return _walk(parsed) or (["body"], problem)


def _is_json(scope: Scope) -> bool:
    """FastAPI's rule: a body is parsed as JSON when it has an ``application/json`` or
    ``application/*+json`` content type, or none (when its ``strict_content_type`` is off;
    checking those too costs nothing, the app refuses them anyway by default)."""
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or (
                media.startswith(b"application/") and media.endswith(b"+json")
            )
    return True


class StrictJsonMiddleware:
    """Refuse non-strict JSON bodies (see the module docstring) before the app parses them.

    ``failure_paths``: routes answering with LightRAG's failure body and 400 instead of 422.
    ``max_bytes``: longer bodies are passed on unparsed (``<= 0``: parse every length).
    ``on_reject`` is called once per refusal (e.g. to count it)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        failure_paths: Collection[str] = LIGHTRAG_FAILURE_PATHS,
        max_bytes: int = 0,
        on_reject: Callable[[], None] | None = None,
    ) -> None:
        self.app = app
        self.failure_paths = frozenset(failure_paths)
        self.max_bytes = max_bytes
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS") or (
            not _is_json(scope)
        ):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(receive, 0) or b""  # no limit here: never None
        except ClientGone:
            return
        if body and (self.max_bytes <= 0 or len(body) <= self.max_bytes):
            if len(body) > LOCATE_MAX_BYTES:
                found = await to_thread.run_sync(json_body_problem, body)
            else:
                found = json_body_problem(body)
            if found is not None:
                if self.on_reject is not None:
                    self.on_reject()
                await self._refuse(send, scope.get("path", ""), *found)
                return
        await self.app(scope, replaying(body, receive), send)

    async def _refuse(self, send: Send, path: str, loc: list[str | int], message: str) -> None:
        if path in self.failure_paths:
            where = " -> ".join(str(x) for x in loc)
            await send_json(send, 400, {
                "status": "failure",
                "message": f"Validation error: {where}: {message}",
                "data": {},
                "metadata": {},
            })
            return
        await send_json(
            send, 422, {"detail": [{"loc": loc, "msg": message, "type": "json_invalid"}]}
        )
