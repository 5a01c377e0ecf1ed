"""Keyword extraction: LightRAG-exact parsing, prompt, cache protocol, and the basic extractor."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import json_repair
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.memory import FakeLLM, LLMCall, MemoryCache
from hexrag.core.hashing import keyword_cache_key, llm_cache_identity, serialize_identity
from hexrag.core.query.keywords import (
    MAX_BASIC_KEYWORDS,
    KeywordResult,
    basic_keywords,
    build_keyword_prompt,
    extract_keywords,
    parse_keywords_payload,
)
from hexrag.core.query.prompts import KEYWORDS_EXTRACTION
from hexrag.ports import LLM, Cache

QUERY = "Who is Alice and what does Acme Corp do?"
IDENTITY = serialize_identity(
    llm_cache_identity("keyword", binding=None, model="gpt-4o-mini", host=None)
)
META = {
    "mode": "mix",
    "response_type": "Multiple Paragraphs",
    "top_k": 40,
    "chunk_top_k": 20,
    "max_entity_tokens": 6000,
    "max_relation_tokens": 8000,
    "max_total_tokens": 30000,
    "user_prompt": "",
    "enable_rerank": False,
}
GOOD = '{"high_level_keywords": ["company alliances", "technology"], "low_level_keywords": ["Alice", "Acme Corp"]}'  # noqa: E501


def scripted_llm(*answers: str | Exception) -> FakeLLM:
    """The memory FakeLLM answering from a script; an Exception in the script is raised."""
    queue = list(answers)

    def script(prompt: str, system: str | None, history: object, json_mode: bool) -> str:
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return FakeLLM(script)


class RecordingCache(MemoryCache):
    """The memory cache, recording which keys were read and what was written."""

    def __init__(self) -> None:
        super().__init__()
        self.gets: list[list[str]] = []
        self.sets: list[dict[str, Any]] = []

    @property
    def data(self) -> dict[str, dict[str, Any]]:
        return dict(self.items())

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        self._entries[key] = json.dumps(entry)

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        self.gets.append(list(keys))
        return await super().get_many(keys)

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        self.sets.append({k: dict(v) for k, v in entries.items()})
        await super().set_many(entries)


def test_fakes_satisfy_the_ports() -> None:
    assert isinstance(scripted_llm(), LLM)
    assert isinstance(RecordingCache(), Cache)


# --------------------------------------------------------------------------------------
# parse_keywords_payload
# --------------------------------------------------------------------------------------

PARSE_CASES: list[tuple[Any, tuple[bool, list[str], list[str]]]] = [
    (GOOD, (True, ["company alliances", "technology"], ["Alice", "Acme Corp"])),
    ("```json\n" + GOOD + "\n```", (True, ["company alliances", "technology"], ["Alice", "Acme Corp"])),  # noqa: E501
    ("```" + GOOD + "```", (True, ["company alliances", "technology"], ["Alice", "Acme Corp"])),
    ("<think>hmm {x}</think>\n" + GOOD, (True, ["company alliances", "technology"], ["Alice", "Acme Corp"])),  # noqa: E501
    ("reasoning without opener</think>" + GOOD, (True, ["company alliances", "technology"], ["Alice", "Acme Corp"])),  # noqa: E501
    ('{"high_level_keywords": "a, b;c\nd", "low_level_keywords": null}', (True, ["a", "b", "c", "d"], [])),  # noqa: E501
    ('{"high_level_keywords": [" a ", "", 3, null, "a"], "low_level_keywords": 7}', (True, ["a", "a"], [])),  # noqa: E501
    ('{"high_level_keywords": ["x, y"]}', (True, ["x, y"], [])),
    ('{"high_level_keywords": ["a", "b"', (True, ["a", "b"], [])),  # json_repair
    ('Sure! {"low_level_keywords": ["Zürich"]} hope it helps', (True, [], ["Zürich"])),
    ("[1, 2]", (False, [], [])),
    ("not json at all", (False, [], [])),
    ("", (False, [], [])),
    (None, (False, [], [])),
    (42, (False, [], [])),
    ({"high_level_keywords": ["h"], "low_level_keywords": ["l"]}, (True, ["h"], ["l"])),
    ('{"high_level_keywords": [], "low_level_keywords": []}', (True, [], [])),
]


@pytest.mark.parametrize(("raw", "expected"), PARSE_CASES)
def test_parse_keywords_payload(raw: Any, expected: tuple[bool, list[str], list[str]]) -> None:
    assert parse_keywords_payload(raw, json_repair.loads) == expected


def test_without_the_injected_repair_only_strict_json_is_read() -> None:
    assert parse_keywords_payload('{"high_level_keywords": ["a", "b"') == (False, [], [])
    assert parse_keywords_payload('Sure! {"low_level_keywords": ["x"]}') == (False, [], [])
    assert parse_keywords_payload(GOOD) == PARSE_CASES[0][1]


def test_parse_model_dump_objects() -> None:
    class Model:
        def model_dump(self) -> dict[str, Any]:
            return {"high_level_keywords": "t1\nt2", "low_level_keywords": ["E"]}

    assert parse_keywords_payload(Model()) == (True, ["t1", "t2"], ["E"])


@pytest.mark.parity
def test_parse_parity_with_installed_lightrag() -> None:
    operate = pytest.importorskip("lightrag.operate")
    for raw, _ in PARSE_CASES:
        assert parse_keywords_payload(raw, json_repair.loads) == operate._parse_keywords_payload(
            raw
        ), raw

    @settings(max_examples=50, deadline=None)
    @given(
        st.one_of(
            st.text(max_size=40),
            st.builds(
                lambda pre, hl, ll, post: pre + json.dumps(
                    {"high_level_keywords": hl, "low_level_keywords": ll}
                ) + post,
                st.sampled_from(["", "```json\n", "<think>x</think>", "  ", "ok: "]),
                st.one_of(st.lists(st.text(max_size=8), max_size=3), st.text(max_size=10)),
                st.lists(st.one_of(st.text(max_size=8), st.integers()), max_size=3),
                st.sampled_from(["", "\n```", " trailing", "}", "]"]),
            ),
        )
    )
    def compare(raw: str) -> None:
        assert parse_keywords_payload(raw, json_repair.loads) == operate._parse_keywords_payload(
            raw
        )

    compare()


# --------------------------------------------------------------------------------------
# Prompt
# --------------------------------------------------------------------------------------


def test_build_keyword_prompt() -> None:
    prompt = build_keyword_prompt("What about {braces}?", "Deutsch")
    assert prompt.endswith("User Query: What about {braces}?\n\n---Output---\nOutput:")
    assert "MUST be in Deutsch." in prompt
    assert '`{"high_level_keywords": [], "low_level_keywords": []}`' in prompt
    assert '"high_level_keywords": ["<high_level_keyword>"],' in prompt
    assert "{{" not in prompt and "{language}" not in prompt and "{examples}" not in prompt
    assert prompt == KEYWORDS_EXTRACTION.replace("{{", "{").replace("}}", "}").replace(
        "{query}", "What about {braces}?"
    ).replace("{language}", "Deutsch").replace(
        "{examples}",
        '{\n  "high_level_keywords": ["<high_level_keyword>"],\n'
        '  "low_level_keywords": ["<low_level_keyword>"]\n}\n',
    )


@pytest.mark.parity
def test_prompt_parity_with_installed_lightrag() -> None:
    prompt_mod = pytest.importorskip("lightrag.prompt")
    p = prompt_mod.PROMPTS
    expected = p["keywords_extraction"].format(
        query=QUERY, examples="\n".join(p["keywords_extraction_examples"]), language="English"
    )
    assert build_keyword_prompt(QUERY, "English") == expected


# --------------------------------------------------------------------------------------
# extract_keywords
# --------------------------------------------------------------------------------------


NOW = 1_700_000_000  # the injected clock: the epoch seconds stamped on cache entries


async def _extract(
    llm: FakeLLM | None, cache: RecordingCache | None, query: str = QUERY
) -> KeywordResult:
    return await extract_keywords(
        query, mode="mix", llm=llm, cache=cache, language="English",
        identity_json=IDENTITY, param_meta=META, clock=lambda: NOW,
    )


KEY = "mix:keywords:7b97002ce1daf718da118c97a14b4405"


async def test_llm_then_cache_hit() -> None:
    llm, cache = scripted_llm(GOOD), RecordingCache()
    first = await _extract(llm, cache)
    assert first == KeywordResult(
        hl=["company alliances", "technology"], ll=["Alice", "Acme Corp"], source="llm"
    )
    assert llm.calls == [LLMCall(build_keyword_prompt(QUERY, "English"), None, [], True, False)]
    assert cache.gets == [[KEY]]
    entry = cache.data[KEY]
    assert entry["return"] == (
        '{"high_level_keywords": ["company alliances", "technology"], '
        '"low_level_keywords": ["Alice", "Acme Corp"]}'
    )
    assert {k: v for k, v in entry.items() if k not in ("create_time", "update_time")} == {
        "return": entry["return"],
        "cache_type": "keywords",
        "chunk_id": None,
        "original_prompt": QUERY,
        "queryparam": META,
        "_id": KEY,
    }
    assert entry["create_time"] == entry["update_time"] == NOW  # the injected clock's time

    second = await _extract(llm, cache)  # the script is empty: a call would fail
    assert second.source == "cache"
    assert (second.hl, second.ll) == (first.hl, first.ll)
    assert len(llm.calls) == 1 and len(cache.sets) == 1


async def test_cached_return_is_ascii_escaped_json() -> None:
    cache = RecordingCache()
    llm = scripted_llm('{"high_level_keywords": ["Zürich"], "low_level_keywords": []}')
    await _extract(llm, cache)
    assert cache.data[KEY]["return"] == '{"high_level_keywords": ["Z\\u00fcrich"], "low_level_keywords": []}'  # noqa: E501


async def test_invalid_cache_entry_is_ignored_and_replaced() -> None:
    cache = RecordingCache()
    cache.put(KEY, {"return": "not json", "create_time": 5, "update_time": 5, "_id": KEY})
    result = await _extract(scripted_llm(GOOD), cache)
    assert result.source == "llm"
    assert cache.data[KEY]["create_time"] == 5  # kept
    assert cache.data[KEY]["update_time"] == NOW
    assert json.loads(cache.data[KEY]["return"])["low_level_keywords"] == ["Alice", "Acme Corp"]


async def test_empty_cached_lists_are_a_miss() -> None:
    cache = RecordingCache()
    cache.put(KEY, {"return": '{"high_level_keywords": [], "low_level_keywords": []}'})
    llm = scripted_llm(GOOD)
    assert (await _extract(llm, cache)).source == "llm"
    assert len(llm.calls) == 1


async def test_valid_entry_in_another_mode_is_not_shared() -> None:
    cache = RecordingCache()
    other_key = keyword_cache_key("hybrid", QUERY, "English", IDENTITY)
    cache.put(other_key, {"return": GOOD, "create_time": 1, "update_time": 1, "_id": other_key})
    llm = scripted_llm('{"high_level_keywords": ["x"], "low_level_keywords": []}')
    result = await _extract(llm, cache)
    assert result.source == "llm" and result.hl == ["x"]
    assert cache.data[other_key]["return"] == GOOD
    hybrid = await extract_keywords(
        QUERY, mode="hybrid", llm=scripted_llm(), cache=cache, language="English",
        identity_json=IDENTITY, param_meta=META, clock=lambda: NOW,
    )
    assert hybrid.source == "cache" and hybrid.ll == ["Alice", "Acme Corp"]


async def test_one_empty_list_is_kept_as_lightrag_does() -> None:
    cache = RecordingCache()
    result = await _extract(scripted_llm('{"high_level_keywords": ["theme"]}'), cache)
    assert result == KeywordResult(hl=["theme"], ll=[], source="llm")
    assert KEY in cache.data


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (RuntimeError("model down"), "RuntimeError: model down"),
        ('{"high_level_keywords": [], "low_level_keywords": []}', "no keywords"),
        ("I cannot help with that", "no JSON object"),
    ],
)
async def test_unusable_llm_falls_back_to_basic(answer: str | Exception, fragment: str) -> None:
    cache = RecordingCache()
    result = await _extract(scripted_llm(answer), cache)
    assert result.source == "basic"
    assert result.llm_error is not None and fragment in result.llm_error
    assert (result.hl, result.ll) == basic_keywords(QUERY)
    assert cache.sets == [] and cache.data == {}


async def test_no_llm_uses_basic_without_touching_the_cache() -> None:
    cache = RecordingCache()
    result = await _extract(None, cache)
    assert result == KeywordResult(hl=["Alice", "Acme Corp"], ll=["Alice", "Acme Corp"],
                                   source="basic", llm_error=None)
    assert cache.gets == [] and cache.sets == []


async def test_without_cache() -> None:
    result = await _extract(scripted_llm(GOOD), None)
    assert result.source == "llm" and result.ll == ["Alice", "Acme Corp"]


# --------------------------------------------------------------------------------------
# basic_keywords
# --------------------------------------------------------------------------------------

BASIC_CASES: list[tuple[str, list[str], list[str]]] = [
    (QUERY, ["Alice", "Acme Corp"], ["Alice", "Acme Corp"]),
    (
        "What is the impact of climate change on agriculture in the European Union?",
        ["impact", "climate change", "agriculture"],
        ["European Union"],
    ),
    (
        "How does LightRAG use PostgreSQL and Neo4j for graph storage?",
        ["use", "graph storage"],
        ["LightRAG", "PostgreSQL", "Neo4j"],
    ),
    ('Compare GPT-4 and Claude on "long context" tasks', ["tasks"], ["GPT-4", "Claude", "long context"]),  # noqa: E501
    ("Tell me about Bank of America's revenue in 2023", ["revenue"], ["Bank of America", "2023"]),
    ("Explain the product_id field in config.yaml", ["field"], ["product_id", "config.yaml"]),
    ("WHAT IS THE CRM API LIMIT FOR product_id 42", ["crm api limit"], ["product_id", "42"]),
    ("Alice’s manager at Acme Corp's HQ", ["manager"], ["Alice", "Acme Corp", "HQ"]),
    ("使用LightRAG查询知识图谱", ["使用", "LightRAG", "查询知识图谱"], ["使用", "LightRAG", "查询知识图谱"]),  # noqa: E501
    ("阿里巴巴的主要业务是什么", ["阿里巴巴的主要业务是什么"], ["阿里巴巴的主要业务是什么"]),
    ("large language model training data quality",
     ["large language model", "training data quality"],
     ["large language model", "training data quality"]),
    ("  what is it?  ", [], ["what is it?"]),
    ("hello hello Hello", ["hello hello"], ["Hello"]),
    ("climate, climate, energy", ["climate", "energy"], ["climate", "energy"]),
    ("We met Acme and ACME and acme corp", ["met", "acme corp"], ["Acme"]),
    ("?!", [], []),
    ("", [], []),
]


@pytest.mark.parametrize(("query", "hl", "ll"), BASIC_CASES)
def test_basic_keywords_examples(query: str, hl: list[str], ll: list[str]) -> None:
    assert basic_keywords(query) == (hl, ll)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=6),
            st.sampled_from(
                ["Alice", "Acme Corp", "the", " ", "\n", "'s", '"', "GPT-4", "中文", "of", ". ",
                 "Bank", "data", "x_y", "NASA", "iPhone", "?", "’", "«", "»", "'"]
            ),
        ),
        max_size=20,
    ).map("".join)
)
def test_basic_keywords_properties(query: str) -> None:
    hl, ll = basic_keywords(query)
    assert basic_keywords(query) == (hl, ll)  # deterministic
    if re.search(r"\w", query):
        assert hl or ll
    else:
        assert hl == [] and ll == []
    for kws in (hl, ll):
        assert len(kws) <= MAX_BASIC_KEYWORDS
        assert all(k and k == k.strip() for k in kws)
    assert len(set(hl)) == len(hl)
    assert len({k.casefold() for k in ll}) == len(ll)
    normalized = _norm(query)
    for kw in hl + ll:
        assert _norm(kw) in normalized, (kw, query)
