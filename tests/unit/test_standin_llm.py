"""The offline stand-in answers each LightRAG prompt hexrag builds in the format LightRAG
parses, from the prompt's own text: keywords (JSON), extraction and gleaning (tuple rows, as
``scripted_kg`` always did), description summaries and answers that cite the context."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hexrag import Chunk, QueryParam
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.documents import encode_file_path
from hexrag.core.ingest.extraction import parse_extraction
from hexrag.core.ingest.extraction_prompts import extraction_prompts, gleaning_history
from hexrag.core.ingest.summary import SummaryLimits, summary_prompt
from hexrag.core.query.keywords import basic_keywords, build_keyword_prompt, parse_keywords_payload
from hexrag.devtools.scripted_kg import kg_reply
from hexrag.devtools.standin_llm import StandInLLM, standin_reply, standin_responder
from hexrag.embed import build_engine

ERP = ("Acme ERP signs users in through Okta. Okta sends SAML assertions to Acme ERP.\n"
       "Finance administrators configure SSO in the Acme ERP admin console.\n"
       "Acme ERP books Invoices in Xero every night.")
CRM = "Acme CRM syncs contacts with Mailchimp every night. Mailchimp sends the Newsletter."


def test_keywords_are_lightrags_json_drawn_from_the_query() -> None:
    for query in ("How do I set up single sign-on with Okta?", "What does Acme CRM sync?",
                  "Xero invoices"):
        reply = standin_reply(build_keyword_prompt(query, "English"))
        valid, hl, ll = parse_keywords_payload(reply)
        assert valid and (hl, ll) == basic_keywords(query) and hl and ll
        assert set(json.loads(reply)) == {"high_level_keywords", "low_level_keywords"}
    _, _, ll = parse_keywords_payload(standin_reply(build_keyword_prompt(
        "How do I set up single sign-on with Okta?", "English")))
    assert "Okta" in ll


def test_extraction_and_gleaning_are_unchanged() -> None:
    prompts = extraction_prompts(ERP)
    first = standin_reply(prompts.user, prompts.system)
    assert first == kg_reply(prompts.user, prompts.system, [])
    entities, relations = parse_extraction(first, "chunk-1", 0)
    assert {"Acme", "Okta", "SAML", "Xero"} <= set(entities) and relations
    history = gleaning_history(prompts, first)
    again = standin_reply(prompts.continue_user, prompts.system, history)
    assert again == kg_reply(prompts.continue_user, prompts.system, history)
    # over the chat wire: system, history..., user
    assert standin_responder([{"role": "system", "content": prompts.system},
                              {"role": "user", "content": prompts.user}]) == first


def test_a_summary_is_drawn_from_the_descriptions() -> None:
    descriptions = ["Okta signs users in to Acme ERP", "Okta sends SAML assertions.",
                    "Okta signs users in to Acme ERP"]
    prompt = summary_prompt("Entity", "Okta", descriptions, tokenizer=default_tokenizer(),
                            limits=SummaryLimits())
    reply = standin_reply(prompt)
    assert reply == "Okta: Okta signs users in to Acme ERP. Okta sends SAML assertions."
    short = summary_prompt("Relation", "Okta - SAML", ["one two three four five",
                           "six seven eight nine ten"], tokenizer=default_tokenizer(),
                           limits=SummaryLimits(length_recommended=6))
    assert standin_reply(short) == "Okta - SAML: one two three"  # at most 6 words in all


class RecordingStandIn(StandInLLM):
    """The stand-in, keeping the system prompts it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.systems: list[str] = []

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        if kwargs.get("system_prompt"):
            self.systems.append(kwargs["system_prompt"])
        return await super().complete(prompt, **kwargs)


async def _engine(llm: StandInLLM | None = None) -> Any:
    chunks = [
        Chunk(id="c-erp", content="# Acme ERP single sign-on\n\n" + ERP, full_doc_id="d1",
              chunk_order_index=0, file_path=encode_file_path(
                  {"product_id": "p-erp", "category_id": "erp"}, "sso.md")),
        Chunk(id="c-crm", content=CRM, full_doc_id="d2", chunk_order_index=0,
              file_path=encode_file_path({"product_id": "p-crm", "category_id": "crm"},
                                         "sync.md")),
    ]
    return await build_engine(chunks=chunks, embedder="hashing:64", llm=llm or StandInLLM())


def test_an_answer_cites_the_context_it_is_drawn_from() -> None:
    llm = RecordingStandIn()

    async def go() -> tuple[str, dict[str, Any]]:
        engine = await _engine(llm)
        answer = await engine.query("How do users sign in?", QueryParam(mode="naive"))
        data = await engine.query_data("How do users sign in?", QueryParam(mode="naive"))
        return answer, data

    answer, data = asyncio.run(go())
    refs = {r["file_path"]: r["reference_id"] for r in data["data"]["references"]}
    erp = refs["product_id:p-erp:category:erp:source:sso.md"]
    lines = answer.splitlines()
    assert f"- Acme ERP signs users in through Okta. [{erp}]" in lines
    assert f"- Okta sends SAML assertions to Acme ERP. [{erp}]" in lines  # same names
    assert "Acme ERP single sign-on" not in answer  # headings are not statements
    assert lines[lines.index("### References") + 2] == f"- [{erp}] sso.md (p-erp / erp)"
    assert "Mailchimp" not in answer  # nothing the question does not touch
    assert "<|COMPLETE|>" not in answer
    # the same context, a question it does not cover: said so, nothing cited
    (system,) = llm.systems
    none = standin_reply("What colour is the sky?", system)
    assert none.startswith("The provided context does not contain enough information")
    assert "[" not in none


def test_keywords_come_from_the_standin_not_the_fallback() -> None:
    async def go() -> dict[str, Any]:
        engine = await _engine()
        return await engine.query_data(  # type: ignore[no-any-return]
            "How do users sign in with Okta?", QueryParam(mode="mix"))

    meta = asyncio.run(go())["metadata"]
    info = meta["processing_info"]
    assert info["keyword_source"] == "llm" and not info.get("keyword_llm_error")
    assert meta["keywords"]["low_level"] == ["Okta"]
