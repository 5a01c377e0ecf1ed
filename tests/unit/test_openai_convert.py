"""OpenAI wire objects <-> hexrag values, without a server (hexrag.adapters.openai.convert)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

pytest.importorskip("openai")

from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hexrag.adapters.openai._common import MalformedResponse
from hexrag.adapters.openai.convert import (
    StreamAssembler,
    build_messages,
    completion_text,
    delta_parts,
    embeddings_to_array,
)
from hexrag.core.model import ChatMessage


def _completion(content: str | None, reasoning: str | None = None) -> ChatCompletion:
    message: dict[str, object] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    })


def _chunk(content: str | None = None, reasoning: str | None = None) -> ChatCompletionChunk:
    delta: dict[str, object] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    return ChatCompletionChunk.model_validate({
        "id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    })


# ---- messages --------------------------------------------------------------------------


def test_messages_are_system_history_user_in_that_order() -> None:
    history = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}]
    messages = build_messages("q2", "SYS", history)
    assert messages == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
    ]
    messages[1]["content"] = "changed"
    assert history[0]["content"] == "q1"  # the caller's history is copied, not shared


@pytest.mark.parametrize("system", [None, ""])
def test_no_system_message_without_a_system_prompt(system: str | None) -> None:
    assert build_messages("hi", system) == [{"role": "user", "content": "hi"}]


def test_history_accepts_chat_message_objects() -> None:
    messages = build_messages("q", None, [ChatMessage("assistant", "earlier")])  # type: ignore[list-item]
    assert messages[0] == {"role": "assistant", "content": "earlier"}


# ---- completions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "plain answer",
        "<think>hmm</think>the answer",
        '```json\n{"high_level_keywords": ["a"]}\n```',
        '{"high_level_keywords": [',
        "  spaced  ",
    ],
)
def test_content_is_returned_verbatim(content: str) -> None:
    assert completion_text(_completion(content), cot=True) == content
    assert completion_text(_completion(content), cot=False) == content


def test_reasoning_only_answer_becomes_a_think_block_when_cot_is_on() -> None:
    response = _completion("", reasoning="step 1")
    assert completion_text(response, cot=True) == "<think>step 1</think>"
    assert completion_text(_completion(None, "r"), cot=True) == "<think>r</think>"


def test_reasoning_is_ignored_when_there_is_content_or_cot_is_off() -> None:
    assert completion_text(_completion("answer", reasoning="why"), cot=True) == "answer"
    assert completion_text(_completion("", reasoning="why"), cot=False) == ""
    assert completion_text(_completion("", reasoning="   "), cot=True) == ""


def test_completion_from_plain_dicts() -> None:
    response = {"choices": [{"message": {"content": "hi", "reasoning_content": None}}]}
    assert completion_text(response, cot=True) == "hi"


@pytest.mark.parametrize(
    "response",
    [
        "not json at all",  # the SDK hands back text when the server's content type is not JSON
        {"foo": 1},
        {"choices": []},
        {"choices": [{"index": 0}]},
        {"choices": [{"message": {"content": ["a", "list"]}}]},
    ],
)
def test_malformed_completions_raise(response: object) -> None:
    with pytest.raises(MalformedResponse):
        completion_text(response, cot=True)


# ---- streaming -------------------------------------------------------------------------


def test_delta_parts_reads_sdk_chunks_and_dicts() -> None:
    assert delta_parts(_chunk("a")) == ("a", None)
    assert delta_parts(_chunk(reasoning="r")) == (None, "r")
    assert delta_parts({"choices": []}) == (None, None)
    assert delta_parts({"choices": [{"delta": {"content": "x"}}]}) == ("x", None)


def _assemble(deltas: list[tuple[str | None, str | None]], cot: bool = True) -> list[str]:
    assembler = StreamAssembler(cot=cot)
    out: list[str] = []
    for content, reasoning in deltas:
        out += assembler.feed(content, reasoning)
    return out + assembler.finish()


def test_stream_plain_pieces_skip_empty_ones() -> None:
    assert _assemble([("", None), ("Hel", None), ("lo", None), (None, None)]) == ["Hel", "lo"]


def test_stream_leading_reasoning_is_wrapped_and_closed_when_content_starts() -> None:
    pieces = _assemble([("", None), (None, "a"), (None, "b"), ("X", None), (None, "late"),
                        ("Y", None)])
    assert pieces == ["<think>", "a", "b", "</think>", "X", "Y"]


def test_stream_reasoning_only_is_closed_at_the_end() -> None:
    assert _assemble([(None, "a"), (None, "b")]) == ["<think>", "a", "b", "</think>"]


def test_stream_reasoning_after_content_or_without_cot_is_dropped() -> None:
    assert _assemble([("X", None), (None, "r")]) == ["X"]
    assert _assemble([(None, "r"), ("X", None)], cot=False) == ["X"]
    assert _assemble([("X", "r")]) == ["X"]  # both at once: content wins


# ---- embeddings ------------------------------------------------------------------------


def _vec(*values: float) -> list[float]:
    return [float(v) for v in values]


def test_embeddings_are_put_in_input_order_by_index() -> None:
    response = CreateEmbeddingResponse.model_validate({
        "object": "list", "model": "m",
        "data": [
            {"object": "embedding", "index": 2, "embedding": _vec(3, 3)},
            {"object": "embedding", "index": 0, "embedding": _vec(1, 1)},
            {"object": "embedding", "index": 1, "embedding": _vec(2, 2)},
        ],
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    })
    matrix = embeddings_to_array(response.data, 3)
    assert matrix.dtype == np.float32
    assert matrix.tolist() == [[1, 1], [2, 2], [3, 3]]


def test_embeddings_without_index_keep_their_position() -> None:
    matrix = embeddings_to_array([{"embedding": _vec(1, 0)}, {"embedding": _vec(0, 1)}], 2)
    assert matrix.tolist() == [[1, 0], [0, 1]]


def test_base64_embeddings_are_decoded_as_little_endian_float32() -> None:
    vec = np.array([0.5, -1.25, 3.0], dtype="<f4")
    encoded = base64.b64encode(vec.tobytes()).decode()
    matrix = embeddings_to_array([{"index": 0, "embedding": encoded}], 1)
    assert matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix[0], vec)


@pytest.mark.parametrize(
    ("data", "n"),
    [
        ([{"index": 0, "embedding": _vec(1)}], 2),  # too few
        ([{"index": 0, "embedding": _vec(1)}, {"index": 0, "embedding": _vec(2)}], 2),  # dup
        ([{"index": 5, "embedding": _vec(1)}], 1),  # out of range
        ([{"index": True, "embedding": _vec(1)}], 1),  # bool is not an index
        ([{"index": 0, "embedding": _vec(1, 2)}, {"index": 1, "embedding": _vec(1)}], 2),  # ragged
        ([{"index": 0, "embedding": [float("nan"), 1.0]}], 1),
        ([{"index": 0, "embedding": []}], 1),
        ([{"index": 0, "embedding": "%%not base64%%"}], 1),
        ([{"index": 0, "embedding": base64.b64encode(b"abc").decode()}], 1),  # not 4-byte aligned
        ([{"index": 0, "embedding": ["a", "b"]}], 1),
        ("a string", 1),
        (None, 1),
    ],
)
def test_malformed_embeddings_raise(data: object, n: int) -> None:
    with pytest.raises(MalformedResponse):
        embeddings_to_array(data, n)
