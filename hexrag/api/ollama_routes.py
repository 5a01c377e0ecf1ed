"""LightRAG's Ollama-compatible routes: ``/api/version``, ``/api/tags``, ``/api/ps``,
``/api/generate`` and ``/api/chat`` (what chat front-ends such as Open WebUI talk to).

As LightRAG 1.5.7 implements them (``lightrag/api/routers/ollama_api.py``):

* the emulated model is ``OLLAMA_EMULATING_MODEL_NAME:OLLAMA_EMULATING_MODEL_TAG``
  (``lightrag:latest``), with LightRAG's fixed size, digest and dates;
* ``/api/chat``: the last message (a ``user`` one) is the query, the earlier ones the
  conversation history. A prefix picks the mode: ``/local``, ``/global``, ``/naive``,
  ``/hybrid``, ``/mix`` (default), ``/bypass`` (the LLM directly), ``/context`` and
  ``/<mode>context`` (the retrieved context instead of an answer); ``/mode[prompt]`` (or
  ``/[prompt]``) adds a user prompt. ``stream`` (default true) answers NDJSON lines
  ``{"model", "created_at", "message": {...}, "done": false}`` and a final ``done: true``
  line with the durations (ns) and token counts; a non-streamed request gets one object.
  Open WebUI's own title / keyword requests (``<chat_history>``) go to the LLM directly;
* ``/api/generate``: the prompt goes to the LLM directly (``system`` as its system prompt),
  ``stream`` default false.

Errors: an unreadable body, no messages, a last message not from ``user``, an empty or too
short query: 400 with LightRAG's message; a request over hexrag's limits
(``MAX_QUERY_CHARS``, ``MAX_HISTORY_MESSAGES``): 413; no LLM: 503. A failure once a stream
has started is reported in-band as LightRAG does (``error`` and a final ``done`` line).
These routes need the API key like every other (LightRAG's default ``WHITELIST_PATHS``
opens ``/api/*``; add it to ``WHITELIST_PATHS`` for the same).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field, ValidationError

from hexrag.api.deadlines import within
from hexrag.api.limits import ApiLimits
from hexrag.api.query_routes import ndjson_response
from hexrag.api.strict_json import json_body_problem
from hexrag.core.errors import BackendTimeout, ConfigurationError, InvalidQuery
from hexrag.core.tokenizer import count_tokens
from hexrag.env import query_param

__all__ = ["add_ollama_routes", "parse_query_mode"]

log = logging.getLogger("hexrag.api")

#: LightRAG's emulated model facts (``lightrag.constants``).
MODEL_SIZE = 7365960935
CREATED_AT = "2024-01-15T00:00:00Z"
DIGEST = "sha256:lightrag"
OLLAMA_VERSION = "0.9.3"

_MODES = {
    "/local ": ("local", False), "/global ": ("global", False), "/naive ": ("naive", False),
    "/hybrid ": ("hybrid", False), "/mix ": ("mix", False), "/bypass ": ("bypass", False),
    "/context": ("mix", True), "/localcontext": ("local", True),
    "/globalcontext": ("global", True), "/hybridcontext": ("hybrid", True),
    "/naivecontext": ("naive", True), "/mixcontext": ("mix", True),
}
_BRACKET = re.compile(r"^/([a-z]*)\[(.*?)\]([\s\S]*)")
_OPEN_WEBUI_TASK = re.compile(r"\n<chat_history>\nUSER:", re.MULTILINE)


def parse_query_mode(query: str) -> tuple[str, str, bool, str | None]:
    """LightRAG's prefix rules: ``(query, mode, only_need_context, user_prompt)``."""
    user_prompt = None
    match = _BRACKET.match(query)
    if match:
        prefix, user_prompt, rest = match.group(1), match.group(2), match.group(3).lstrip()
        query = f"/{prefix} {rest}" if prefix else rest
    for prefix, (mode, context_only) in _MODES.items():
        if query.startswith(prefix):
            return query[len(prefix):].lstrip(), mode, context_only, user_prompt
    return query, "mix", False, user_prompt


class OllamaMessage(BaseModel):
    """A chat message."""

    role: str = Field(max_length=64)
    content: str
    images: list[str] | None = None


class OllamaChatRequest(BaseModel):
    """``POST /api/chat``."""

    model: str = Field(max_length=256)
    messages: list[OllamaMessage]
    stream: bool = True
    options: dict[str, Any] | None = None
    system: str | None = None


class OllamaGenerateRequest(BaseModel):
    """``POST /api/generate``."""

    model: str = Field(max_length=256)
    prompt: str
    system: str | None = None
    stream: bool = False
    options: dict[str, Any] | None = None


def _model_name(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    env = os.environ if env is None else env
    name = env.get("OLLAMA_EMULATING_MODEL_NAME") or "lightrag"
    tag = env.get("OLLAMA_EMULATING_MODEL_TAG") or "latest"
    return name, f"{name}:{tag}"


async def _parse(request: Request, model: type[BaseModel], limits: ApiLimits) -> Any:
    """The body as ``model`` (JSON whatever the content type, as LightRAG); 400/413.

    Held to hexrag's strict JSON (:func:`~hexrag.api.strict_json.json_body_problem`) here too:
    the middleware checks JSON content types only, and these routes read any."""
    raw = await request.body()
    refused = json_body_problem(raw)
    if refused is not None:
        raise HTTPException(400, f"Invalid JSON in request body: {refused[1]}")
    try:
        parsed = model.model_validate(json.loads(raw))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        if isinstance(exc, ValidationError):
            fields = ", ".join(".".join(str(x) for x in e["loc"]) or "body" for e in exc.errors())
            raise HTTPException(400, f"Invalid request body ({fields})") from None
        raise HTTPException(400, "Invalid JSON in request body") from None
    texts: list[str] = []
    if isinstance(parsed, OllamaChatRequest):
        if len(parsed.messages) > limits.max_history_messages + 1:
            raise HTTPException(413, "Request payload exceeds the allowed size (messages).")
        texts = [m.content for m in parsed.messages] + [m.role for m in parsed.messages]
    elif isinstance(parsed, OllamaGenerateRequest):
        texts = [parsed.prompt]
    texts += [getattr(parsed, "system", None) or "", getattr(parsed, "model", "")]
    if sum(len(t) for t in texts) > 2 * limits.max_query_chars:
        raise HTTPException(413, "Request payload exceeds the allowed size.")
    return parsed


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def _documented(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI of a route reading ``model`` from its body itself (any content type)."""
    schema = model.model_json_schema()
    body = _inline(schema, schema.get("$defs", {}))
    return {"requestBody": {"required": True,
                            "content": {"application/json": {"schema": body}}}}


_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "The answer (NDJSON lines when streamed)",
          "content": {"application/json": {}, "application/x-ndjson": {}}},
    400: {"description": "Unreadable body, no user message, empty or too short query"},
    413: {"description": "Over MAX_QUERY_CHARS or MAX_HISTORY_MESSAGES"},
    422: {"description": "A JSON body with a NaN, a lone surrogate or a NUL (hexrag's strict "
                         "JSON, before the route)"},
    503: {"description": "No LLM configured, or a store or the model unavailable"},
    504: {"description": "Over QUERY_TIMEOUT"},
}


def add_ollama_routes(app: FastAPI, engine: Any, limits: ApiLimits) -> None:
    """Mount LightRAG's Ollama-compatible routes under ``/api`` on ``app``; ``engine``
    answers within ``QUERY_TIMEOUT`` (``limits``)."""
    name, model = _model_name()

    def tokens(text: str) -> int:
        return count_tokens(text, engine.tokenizer)

    async def bounded(awaitable: Any) -> Any:
        return await within(awaitable, limits.query_timeout, lambda: BackendTimeout(
            f"the query did not finish within QUERY_TIMEOUT={limits.query_timeout:g}s"))

    def stamp(**fields: Any) -> bytes:
        return (json.dumps({"model": model, "created_at": CREATED_AT, **fields},
                           ensure_ascii=False) + "\n").encode("utf-8")

    def timings(start: int, first: int, last: int, prompt_tokens: int, text: str
                ) -> dict[str, Any]:
        return {"done_reason": "stop", "done": True, "total_duration": last - start,
                "load_duration": 0, "prompt_eval_count": prompt_tokens,
                "prompt_eval_duration": first - start, "eval_count": tokens(text),
                "eval_duration": last - first}

    def streamed(answer: Any, start: int, prompt_tokens: int, chat: bool) -> StreamingResponse:
        def piece(text: str, **more: Any) -> bytes:
            if chat:
                return stamp(message={"role": "assistant", "content": text, "images": None},
                             **more)
            return stamp(response=text, **more)

        async def lines() -> AsyncIterator[bytes]:
            if isinstance(answer, str):
                last = time.time_ns()
                yield piece(answer, done=False)
                final = timings(start, start, last, prompt_tokens, answer)
                yield piece("", **final) if chat else piece("", context=[], **final)
                return
            first, total = None, []
            try:
                async for chunk in answer:
                    if chunk:
                        first = first or time.time_ns()
                        total.append(chunk)
                        yield piece(chunk, done=False)
            except Exception as exc:  # the stream has started: LightRAG's in-band error
                log.warning("ollama stream failed: %s", exc)
                message = f"\n\nError: Provider error: {type(exc).__name__}"
                yield piece(message, error=message, done=False)
                yield piece("", done=True)
                return
            last = time.time_ns()
            final = timings(start, first or start, last, prompt_tokens, "".join(total))
            yield piece("", **final) if chat else piece("", context=[], **final)

        return ndjson_response(lines())

    def need_llm() -> Any:
        if engine.llm is None:
            raise ConfigurationError("the Ollama-compatible routes need an LLM; none is "
                                     "configured")
        return engine.llm

    @app.get("/api/version", tags=["ollama"])
    async def version() -> dict[str, str]:
        """The Ollama version LightRAG emulates."""
        return {"version": OLLAMA_VERSION}

    def details(family: str, size: str) -> dict[str, Any]:
        return {"parent_model": "", "format": "gguf", "family": family, "families": [family],
                "parameter_size": size, "quantization_level": "Q4_0"}

    @app.get("/api/tags", tags=["ollama"])
    async def tags() -> dict[str, Any]:
        """The one emulated model."""
        return {"models": [{"name": model, "model": model, "size": MODEL_SIZE, "digest": DIGEST,
                            "modified_at": CREATED_AT, "details": details(name, "13B")}]}

    @app.get("/api/ps", tags=["ollama"])
    async def ps() -> dict[str, Any]:
        """The emulated model, always running."""
        return {"models": [{"name": model, "model": model, "size": MODEL_SIZE, "digest": DIGEST,
                            "details": details("llama", "7.2B"),
                            "expires_at": "2050-12-31T14:38:31.83753-07:00",
                            "size_vram": MODEL_SIZE}]}

    @app.post("/api/generate", tags=["ollama"], responses=_ANSWERS,
              openapi_extra=_documented(OllamaGenerateRequest))
    async def generate(request: Request) -> Any:
        """The prompt answered by the LLM directly (no retrieval)."""
        req = await _parse(request, OllamaGenerateRequest, limits)
        if not req.prompt.strip():
            raise HTTPException(400, "Query must not be empty.")
        llm = need_llm()
        start = time.time_ns()
        prompt_tokens = tokens(req.prompt)
        if req.stream:
            return streamed(llm.stream(req.prompt, system_prompt=req.system), start,
                            prompt_tokens, chat=False)
        first = time.time_ns()
        text = await bounded(llm.complete(req.prompt, system_prompt=req.system))
        text = text or "No response generated"
        return {"model": model, "created_at": CREATED_AT, "response": text, "context": [],
                **timings(start, first, time.time_ns(), prompt_tokens, text)}

    @app.post("/api/chat", tags=["ollama"], responses=_ANSWERS,
              openapi_extra=_documented(OllamaChatRequest))
    async def chat(request: Request) -> Any:
        """The last user message answered through retrieval (mode by prefix), or by the LLM
        directly for ``/bypass`` and Open WebUI's own tasks."""
        req = await _parse(request, OllamaChatRequest, limits)
        if not req.messages:
            raise HTTPException(400, "No messages provided")
        if req.messages[-1].role != "user":
            raise HTTPException(400, "Last message must be from user role")
        history = [{"role": m.role, "content": m.content} for m in req.messages[:-1]]
        query, mode, context_only, user_prompt = parse_query_mode(req.messages[-1].content)
        if not query.strip():
            raise HTTPException(400, "Query must not be empty.")
        start = time.time_ns()
        prompt_tokens = tokens(query)
        direct = mode == "bypass" or (not req.stream and _OPEN_WEBUI_TASK.search(query))
        if direct:
            llm = need_llm()
            if req.stream:
                answer: Any = llm.stream(query, system_prompt=req.system, history=history)
                return streamed(answer, start, prompt_tokens, chat=True)
            first = time.time_ns()
            text = await bounded(llm.complete(query, system_prompt=req.system, history=history))
        else:
            fields: dict[str, Any] = {"mode": mode, "stream": req.stream,
                                      "only_need_context": context_only,
                                      "conversation_history": history}
            if user_prompt is not None:
                fields["user_prompt"] = user_prompt
            first = time.time_ns()
            try:
                result = await bounded(engine.query_result(query, query_param(**fields)))
            except InvalidQuery as exc:
                raise HTTPException(400, str(exc)) from None
            if req.stream:
                answer = (result.response_iterator if result.response_iterator is not None
                          else result.content or "")
                return streamed(answer, start, prompt_tokens, chat=True)
            text = result.content or ""
        text = text or "No response generated"
        return {"model": model, "created_at": CREATED_AT,
                "message": {"role": "assistant", "content": text, "images": None},
                **timings(start, first, time.time_ns(), prompt_tokens, text)}
