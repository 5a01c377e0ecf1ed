"""hexrag's extraction prompts are the very prompts LightRAG 1.5.7 sends: LightRAG's own
``ainsert`` runs with a recording LLM, and every extraction call (the first one and the
gleaning one, with its history) is compared byte for byte."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.core.ingest import extraction_prompts as ep
from hexrag.core.ingest.extraction import parse_extraction, sanitize_text_for_encoding
from hexrag.devtools.lightrag_data import (
    _quiet_lightrag,
    lightrag_embedding_func,
    register_offline_tiktoken,
    require_lightrag,
)

require_lightrag()

D = ep.TUPLE_DELIMITER
TEXT = (
    "Acme CRM is a customer relationship product made by Acme Corp. "
    "It synchronises contacts with Mailchimp every night, and its sales pipeline "
    "feeds the Acme ERP invoicing module."
)
ANSWER = (
    f"entity{D}Acme CRM{D}product{D}A customer relationship product by Acme Corp.\n"
    f"entity{D}Mailchimp{D}organization{D}An email marketing service.\n"
    f"relation{D}Acme CRM{D}Mailchimp{D}contact sync{D}Acme CRM syncs contacts nightly.\n"
    f"{ep.COMPLETION_DELIMITER}"
)


def _lightrag_calls(tmp: Path, text: str = TEXT) -> tuple[list[dict[str, Any]], str]:
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()
    calls: list[dict[str, Any]] = []

    async def llm(prompt: str, system_prompt: str | None = None,
                  history_messages: list[dict[str, Any]] | None = None, **_: Any) -> str:
        calls.append({"prompt": prompt, "system": system_prompt,
                      "history": list(history_messages or [])})
        return ANSWER if len(calls) == 1 else ep.COMPLETION_DELIMITER

    async def run() -> None:
        rag = LightRAG(
            working_dir=str(tmp), embedding_func=lightrag_embedding_func(HashingEmbedder(32)),
            llm_model_func=llm, tokenizer=TiktokenTokenizer("gpt-4o-mini"),
            enable_llm_cache=False, enable_llm_cache_for_entity_extract=False,
        )
        await rag.initialize_storages()
        try:
            await rag.ainsert(text)
        finally:
            await rag.finalize_storages()

    asyncio.run(run())
    # LightRAG's document id: md5 of the sanitised text (its first chunk: <doc>-chunk-000)
    doc_id = "doc-" + hashlib.md5(sanitize_text_for_encoding(text).encode("utf-8")).hexdigest()
    records = json.loads((tmp / "kv_store_text_chunks.json").read_text("utf-8"))
    record = records[f"{doc_id}-chunk-000"]
    return [c for c in calls if c["system"] and "Knowledge Graph Specialist" in c["system"]], \
        record["content"]



ODD = "  Acme &amp; Co.\x07 ships <b>CRM</b> tools &lt;fast&gt;. "


@pytest.mark.parametrize("text", [TEXT, ODD])
def test_prompts_equal_what_lightrag_sends(tmp_path: Path, text: str) -> None:
    calls, chunk_text = _lightrag_calls(tmp_path, text)
    assert len(calls) == 2, [c["prompt"][:80] for c in calls]  # first pass + one gleaning
    mine = ep.extraction_prompts(chunk_text)
    first, glean = calls
    assert first["system"] == mine.system
    assert first["prompt"] == mine.user
    assert first["history"] == []
    assert glean["system"] == mine.system
    assert glean["prompt"] == mine.continue_user
    assert glean["history"] == ep.gleaning_history(mine, ANSWER)
    nodes, edges = parse_extraction(ANSWER, "chunk-x", 0)
    assert set(nodes) == {"Acme CRM", "Mailchimp"} and len(edges) == 1


def test_prompt_texts_are_pinned() -> None:
    """The reproduced texts do not drift (md5 of each constant)."""
    digests = {
        name: hashlib.md5(getattr(ep, name).encode("utf-8")).hexdigest()
        for name in ("SYSTEM_PROMPT", "USER_PROMPT", "CONTINUE_PROMPT", "SECTION_CONTEXT",
                     "DEFAULT_ENTITY_TYPES_GUIDANCE", "SUMMARIZE_DESCRIPTIONS")
    }
    from lightrag.prompt import PROMPTS, get_default_entity_extraction_prompt_profile

    theirs = {
        "SYSTEM_PROMPT": PROMPTS["entity_extraction_system_prompt"],
        "USER_PROMPT": PROMPTS["entity_extraction_user_prompt"],
        "CONTINUE_PROMPT": PROMPTS["entity_continue_extraction_user_prompt"],
        "SECTION_CONTEXT": PROMPTS["entity_extraction_section_context"],
        "DEFAULT_ENTITY_TYPES_GUIDANCE":
            get_default_entity_extraction_prompt_profile()["entity_types_guidance"],
        "SUMMARIZE_DESCRIPTIONS": PROMPTS["summarize_entity_descriptions"],
    }
    assert digests == {k: hashlib.md5(v.encode("utf-8")).hexdigest() for k, v in theirs.items()}
    assert ep.EXAMPLES == tuple(
        get_default_entity_extraction_prompt_profile()["entity_extraction_examples"]
    )
