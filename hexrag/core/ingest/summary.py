"""Merging description fragments: LightRAG 1.5.7's join-or-summarise rule, stated plainly.

When an entity or relation collects several descriptions, LightRAG
(``_handle_entity_relation_summary`` / ``_summarize_descriptions`` in ``operate.py``):

1. one description: kept as it is (sanitised);
2. while the descriptions together exceed ``summary_context_size`` tokens (and there are more
   than two), map-reduce: group them in order into groups of at most ``summary_context_size``
   tokens (a group gets at least two descriptions when it can), summarise every group of two
   or more with the LLM (a single one is kept), and repeat on the results;
3. then: fewer than ``force_llm_summary_on_merge`` descriptions and fewer than
   ``summary_max_tokens`` tokens → joined with the separator, no LLM; otherwise one final
   LLM summary.

The summary prompt lists the descriptions as JSON lines (``{"Description": ...}``), cut to
``summary_context_size`` tokens with LightRAG's ``truncate_list_by_token_size``, in LightRAG's
``summarize_entity_descriptions`` template; the answer loses its ``<think>`` blocks and is
sanitised. The LLM call itself is
the caller's (``summarize(prompt) -> answer``), so the rule stays pure.
``tests/unit/test_summary.py`` proves it equal to LightRAG's own functions.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from hexrag.core.ingest.extraction import remove_think_tags, sanitize_text_for_encoding
from hexrag.core.ingest.extraction_prompts import SUMMARIZE_DESCRIPTIONS
from hexrag.core.tokenizer import Tokenizer, truncate_list_by_token_size

__all__ = ["SummaryLimits", "merge_descriptions", "summary_prompt"]


@dataclass(frozen=True, slots=True)
class SummaryLimits:
    """LightRAG's ``SUMMARY_CONTEXT_SIZE``, ``SUMMARY_MAX_TOKENS``,
    ``FORCE_LLM_SUMMARY_ON_MERGE``, ``SUMMARY_LENGTH_RECOMMENDED`` and ``SUMMARY_LANGUAGE``."""

    context_size: int = 12000
    max_tokens: int = 1200
    force_llm_summary_on_merge: int = 8
    length_recommended: int = 600
    language: str = "English"


def summary_prompt(
    description_type: str,
    name: str,
    descriptions: Sequence[str],
    *,
    tokenizer: Tokenizer,
    limits: SummaryLimits,
) -> str:
    """The prompt LightRAG sends to summarise ``descriptions`` (sanitised, as sent)."""
    lines = [json.dumps({"Description": d}, ensure_ascii=False) for d in descriptions]
    kept = truncate_list_by_token_size(lines, "\n", limits.context_size, tokenizer)
    prompt = SUMMARIZE_DESCRIPTIONS.format(
        description_type=description_type,
        description_name=name,
        description_list="\n".join(lines[:kept]),
        summary_length=limits.length_recommended,
        language=limits.language,
    )
    return sanitize_text_for_encoding(prompt)


async def merge_descriptions(
    description_type: str,
    name: str,
    descriptions: Sequence[str],
    separator: str,
    *,
    tokenizer: Tokenizer,
    limits: SummaryLimits,
    summarize: Callable[[str], Awaitable[str]],
) -> tuple[str, bool]:
    """The merged description and whether the LLM was used (see the module docstring)."""
    if not descriptions:
        return "", False
    if len(descriptions) == 1:
        return sanitize_text_for_encoding(descriptions[0]), False

    async def llm(group: Sequence[str]) -> str:
        answer = await summarize(
            summary_prompt(description_type, name, group, tokenizer=tokenizer, limits=limits)
        )
        return sanitize_text_for_encoding(remove_think_tags(answer))

    current = list(descriptions)
    used = False
    while True:
        counts = [len(tokenizer.encode(d)) for d in current]
        total = sum(counts)
        if total <= limits.context_size or len(current) <= 2:
            if len(current) < limits.force_llm_summary_on_merge and total < limits.max_tokens:
                return sanitize_text_for_encoding(separator.join(current)) or "", used
            return await llm(current), True
        groups: list[list[str]] = []
        group: list[str] = []
        group_tokens = 0
        for desc, n in zip(current, counts, strict=True):
            if group_tokens + n > limits.context_size and group:
                if len(group) == 1:
                    groups.append([*group, desc])  # at least two per group
                    group, group_tokens = [], 0
                else:
                    groups.append(group)
                    group, group_tokens = [desc], n
            else:
                group.append(desc)
                group_tokens += n
        if group:
            groups.append(group)
        summaries = []
        for g in groups:
            if len(g) == 1:
                summaries.append(g[0])
            else:
                summaries.append(await llm(g))
                used = True
        current = summaries
