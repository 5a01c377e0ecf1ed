"""hexrag's entity merge equals LightRAG 1.5.7's ``_merge_nodes_then_upsert`` (node written,
vector record, chunk-tracking row, LLM summaries) on generated fragments, stored nodes,
tracking rows and limits; LightRAG runs with in-memory fakes of its storages."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.merging import MergeSettings, merge_entity
from hexrag.core.summary import SummaryLimits
from hexrag.devtools.lightrag_data import register_offline_tiktoken, require_lightrag

require_lightrag()
register_offline_tiktoken()

from lightrag.operate import _merge_nodes_then_upsert  # noqa: E402
from lightrag.utils import TiktokenTokenizer  # noqa: E402

logging.getLogger("lightrag").setLevel(logging.CRITICAL)
TOK = default_tokenizer()
LR_TOK = TiktokenTokenizer("gpt-4o-mini")


class FakeGraph:
    def __init__(self, node: dict[str, Any] | None) -> None:
        self.node, self.written = node, None

    async def get_node(self, name: str) -> dict[str, Any] | None:
        return dict(self.node) if self.node else None

    async def upsert_node(self, name: str, node_data: dict[str, Any]) -> None:
        self.written = dict(node_data)


class FakeKV:
    def __init__(self, row: dict[str, Any] | None) -> None:
        self.row, self.written = row, None

    async def get_by_id(self, key: str) -> dict[str, Any] | None:
        return self.row

    async def upsert(self, data: dict[str, Any]) -> None:
        self.written = data


class FakeVdb:
    def __init__(self) -> None:
        self.written: dict[str, Any] | None = None

    async def upsert(self, data: dict[str, Any]) -> None:
        self.written = data


def _answer(prompt: str) -> str:
    return "S" + hashlib.md5(prompt.encode("utf-8")).hexdigest()[:6]


def _lightrag(name: str, frags: list[dict[str, Any]], stored: dict[str, Any] | None,
              row: dict[str, Any] | None, s: MergeSettings) -> dict[str, Any]:
    prompts: list[str] = []

    async def llm(prompt: str, **_: Any) -> str:
        prompts.append(prompt)
        return _answer(prompt)

    graph, kv, vdb = FakeGraph(stored), FakeKV(row), FakeVdb()
    config = {
        "tokenizer": LR_TOK, "summary_context_size": s.summary.context_size,
        "summary_max_tokens": s.summary.max_tokens,
        "force_llm_summary_on_merge": s.summary.force_llm_summary_on_merge,
        "summary_length_recommended": s.summary.length_recommended,
        "_resolved_summary_language": s.summary.language, "addon_params": {},
        "role_llm_funcs": {"extract": llm}, "llm_model_name": "m",
        "source_ids_limit_method": s.limit_method, "max_source_ids_per_entity": s.max_source_ids,
        "max_file_paths": s.max_file_paths, "file_path_more_placeholder": "truncated",
    }
    out = asyncio.run(_merge_nodes_then_upsert(
        name, [dict(f) for f in frags], graph, vdb, config, entity_chunks_storage=kv,
    ))
    node = graph.written
    if node is not None:
        node.pop("created_at", None)
    tracked = kv.written[name]["chunk_ids"] if kv.written else None
    vector = None
    if vdb.written:
        ((vid, payload),) = vdb.written.items()
        vector = {"id": vid, **payload}
    return {"node": node if node is not None else out, "vector": vector, "tracked": tracked,
            "changed": node is not None, "prompts": prompts}


def _hexrag(name: str, frags: list[dict[str, Any]], stored: dict[str, Any] | None,
            row: dict[str, Any] | None, s: MergeSettings) -> dict[str, Any]:
    prompts: list[str] = []

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return _answer(prompt)

    m = asyncio.run(merge_entity(name, frags, stored, row, settings=s, tokenizer=TOK,
                                 summarize=summarize))
    return {"node": m.node, "vector": m.vector, "tracked": m.tracked_chunk_ids,
            "changed": m.changed, "prompts": prompts}


chunk_ids = st.sampled_from([f"chunk-{i}" for i in range(8)])
paths = st.sampled_from(["a.md", "b.md", "c.md", "d.md", "...truncated...(KEEP Old)"])
descs = st.sampled_from(["A CRM.", "A CRM.", "Sells CRM software.", "  spaced  ", "x\x07y",
                         "Acme builds tools " * 5, ""])
fragment = st.fixed_dictionaries({
    "entity_name": st.just("Acme"), "entity_type": st.sampled_from(["org", "product", "org"]),
    "description": descs, "source_id": chunk_ids, "file_path": paths,
    "timestamp": st.integers(1, 4),
})
stored_node = st.one_of(st.none(), st.fixed_dictionaries({
    "entity_id": st.just("Acme"),
    "entity_type": st.sampled_from(["org", "", "org,product", ",", "UNKNOWN"]),
    "description": st.lists(descs, max_size=3).map("<SEP>".join),
    "source_id": st.lists(chunk_ids, max_size=4).map("<SEP>".join),
    "file_path": st.lists(paths, max_size=3).map("<SEP>".join),
}))
tracking = st.one_of(st.none(), st.just({}), st.fixed_dictionaries(
    {"chunk_ids": st.lists(chunk_ids, max_size=5)}))
merge_settings = st.builds(
    MergeSettings,
    max_source_ids=st.integers(1, 6), limit_method=st.sampled_from(["KEEP", "FIFO"]),
    max_file_paths=st.integers(1, 4),
    summary=st.builds(SummaryLimits, context_size=st.integers(20, 120),
                      max_tokens=st.integers(5, 80), force_llm_summary_on_merge=st.integers(2, 6),
                      length_recommended=st.just(50)),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fragment, min_size=1, max_size=7), stored_node, tracking, merge_settings)
def test_entity_merge_equals_lightrags(frags: list[dict[str, Any]],
                                       stored: dict[str, Any] | None,
                                       row: dict[str, Any] | None, s: MergeSettings) -> None:
    try:
        want = _lightrag("Acme", frags, stored, row, s)
    except ValueError:
        want = None
    try:
        got = _hexrag("Acme", frags, stored, row, s)
    except ValueError:
        got = None
    assert got == want
