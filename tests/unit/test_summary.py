"""hexrag's description merge equals LightRAG 1.5.7's ``_handle_entity_relation_summary``
(join or map-reduce LLM summaries): same result, same LLM use, same prompts in the same order,
on generated description lists and small limits that force every branch."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.ingest.extraction import remove_think_tags
from hexrag.core.ingest.summary import SummaryLimits, merge_descriptions
from hexrag.devtools.lightrag_data import register_offline_tiktoken, require_lightrag

require_lightrag()
register_offline_tiktoken()

from lightrag.operate import _handle_entity_relation_summary  # noqa: E402
from lightrag.utils import TiktokenTokenizer  # noqa: E402
from lightrag.utils import remove_think_tags as lr_remove_think_tags  # noqa: E402

logging.getLogger("lightrag").setLevel(logging.CRITICAL)
TOK = default_tokenizer()
LR_TOK = TiktokenTokenizer("gpt-4o-mini")


def _answer(prompt: str) -> str:
    digest = hashlib.md5(prompt.encode("utf-8")).hexdigest()[:6]
    return f"<think>plan</think> Summary {digest} &amp; more\x07 "


def _lightrag(descs: list[str], limits: SummaryLimits) -> tuple[str, bool, list[str]]:
    prompts: list[str] = []

    async def llm(prompt: str, **_: Any) -> str:
        prompts.append(prompt)
        return _answer(prompt)

    config = {
        "tokenizer": LR_TOK, "summary_context_size": limits.context_size,
        "summary_max_tokens": limits.max_tokens,
        "force_llm_summary_on_merge": limits.force_llm_summary_on_merge,
        "summary_length_recommended": limits.length_recommended,
        "_resolved_summary_language": limits.language, "addon_params": {},
        "role_llm_funcs": {"extract": llm}, "llm_model_name": "m",
    }
    text, used = asyncio.run(
        _handle_entity_relation_summary("Entity", "Acme", descs, "<SEP>", config, None)
    )
    return text, used, prompts


def _hexrag(descs: list[str], limits: SummaryLimits) -> tuple[str, bool, list[str]]:
    prompts: list[str] = []

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return _answer(prompt)

    text, used = asyncio.run(merge_descriptions(
        "Entity", "Acme", descs, "<SEP>", tokenizer=TOK, limits=limits, summarize=summarize
    ))
    return text, used, prompts


fragment = st.lists(st.sampled_from(
    ["Acme", " sells", " CRM", " software", ".", " 中文", " &amp;", "\x07", " é", "\n"]
), min_size=1, max_size=40).map("".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fragment, max_size=14), st.integers(20, 200), st.integers(5, 120),
       st.integers(2, 9))
def test_merge_equals_lightrags(descs: list[str], context: int, max_tokens: int,
                                force: int) -> None:
    limits = SummaryLimits(context_size=context, max_tokens=max_tokens,
                           force_llm_summary_on_merge=force, length_recommended=50)
    assert _hexrag(descs, limits) == _lightrag(descs, limits)


def test_defaults_join_a_few_short_descriptions() -> None:
    text, used, prompts = _hexrag(["A CRM.", "A product."], SummaryLimits())
    assert (text, used, prompts) == ("A CRM.<SEP>A product.", False, [])


@given(st.text(alphabet=st.sampled_from(list("ab<>/think \n")), max_size=40))
def test_think_tags_removed_as_lightrag(text: str) -> None:
    assert remove_think_tags(text) == lr_remove_think_tags(text)


def test_two_oversized_descriptions_take_lightrags_branch() -> None:
    """Two descriptions over ``summary_context_size`` but under ``summary_max_tokens``: joined
    without the LLM (LightRAG never map-reduces two); over both limits: one LLM summary."""
    descs = ["Acme sells CRM software to mid-size companies worldwide. " * 3] * 2
    for max_tokens in (500, 30):
        limits = SummaryLimits(context_size=20, max_tokens=max_tokens)
        assert _hexrag(descs, limits) == _lightrag(descs, limits)
    assert _hexrag(descs, SummaryLimits(context_size=20, max_tokens=500))[1] is False
