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
from hexrag.core.ingest.merging import MergeSettings, merge_entity, merge_relation
from hexrag.core.ingest.summary import SummaryLimits
from hexrag.devtools.lightrag_data import register_offline_tiktoken, require_lightrag

require_lightrag()
register_offline_tiktoken()

from lightrag.operate import (  # noqa: E402
    _merge_edges_then_upsert,
    _merge_nodes_then_upsert,
)
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


# ------------------------------------------------------------------------------------------
# relations
# ------------------------------------------------------------------------------------------



class FakeRelGraph:
    def __init__(self, edge: dict[str, Any] | None, nodes: dict[str, dict[str, Any]]) -> None:
        self.edge, self.nodes = edge, nodes
        self.edge_written: dict[str, Any] | None = None
        self.nodes_written: dict[str, dict[str, Any]] = {}

    async def has_edge(self, a: str, b: str) -> bool:
        return self.edge is not None

    async def get_edge(self, a: str, b: str) -> dict[str, Any] | None:
        return dict(self.edge) if self.edge else None

    async def get_node(self, name: str) -> dict[str, Any] | None:
        node = self.nodes.get(name)
        return dict(node) if node else None

    async def upsert_node(self, name: str, node_data: dict[str, Any]) -> None:
        self.nodes_written[name] = dict(node_data)

    async def upsert_edge(self, a: str, b: str, edge_data: dict[str, Any]) -> None:
        self.edge_written = dict(edge_data)


class FakeKVMany:
    def __init__(self, rows: dict[str, Any]) -> None:
        self.rows = rows
        self.written: dict[str, Any] = {}

    async def get_by_id(self, key: str) -> Any:
        return self.rows.get(key)

    async def upsert(self, data: dict[str, Any]) -> None:
        self.written.update(data)


class FakeVdbMany:
    def __init__(self) -> None:
        self.written: dict[str, Any] = {}
        self.deleted: list[str] = []

    async def upsert(self, data: dict[str, Any]) -> None:
        self.written.update(data)

    async def delete(self, ids: list[str]) -> None:
        self.deleted += ids


def _rel_lightrag(src: str, tgt: str, frags: list[dict[str, Any]], edge: dict[str, Any] | None,
                  row: Any, nodes: dict[str, Any], node_rows: dict[str, Any],
                  s: MergeSettings) -> dict[str, Any]:
    from lightrag.utils import make_relation_chunk_key

    prompts: list[str] = []

    async def llm(prompt: str, **_: Any) -> str:
        prompts.append(prompt)
        return _answer(prompt)

    graph = FakeRelGraph(edge, nodes)
    rel_kv = FakeKVMany({make_relation_chunk_key(src, tgt): row} if row is not None else {})
    ent_kv = FakeKVMany(node_rows)
    rel_vdb, ent_vdb = FakeVdbMany(), FakeVdbMany()
    config = {
        "tokenizer": LR_TOK, "summary_context_size": s.summary.context_size,
        "summary_max_tokens": s.summary.max_tokens,
        "force_llm_summary_on_merge": s.summary.force_llm_summary_on_merge,
        "summary_length_recommended": s.summary.length_recommended,
        "_resolved_summary_language": s.summary.language, "addon_params": {},
        "role_llm_funcs": {"extract": llm}, "llm_model_name": "m",
        "source_ids_limit_method": s.limit_method, "max_source_ids_per_entity": s.max_source_ids,
        "max_source_ids_per_relation": s.max_source_ids_relation,
        "max_file_paths": s.max_file_paths, "file_path_more_placeholder": "truncated",
    }
    asyncio.run(_merge_edges_then_upsert(
        src, tgt, [dict(f) for f in frags], graph, rel_vdb, ent_vdb, config,
        relation_chunks_storage=rel_kv, entity_chunks_storage=ent_kv,
    ))
    edge_out = graph.edge_written
    if edge_out is not None:
        edge_out.pop("created_at", None)
    nodes_out = {k: {kk: vv for kk, vv in v.items() if kk != "created_at"}
                 for k, v in graph.nodes_written.items()}
    rel_vector = None
    if rel_vdb.written:
        ((vid, payload),) = rel_vdb.written.items()
        rel_vector = {"id": vid, **payload}
    tracked = next(iter(rel_kv.written.values()))["chunk_ids"] if rel_kv.written else None
    return {
        "edge": edge_out, "vector": rel_vector,
        "stale": [i for i in rel_vdb.deleted if rel_vector is None or i != rel_vector["id"]],
        "tracked": tracked, "nodes": nodes_out,
        "node_vectors": {v["entity_name"]: {"id": k, **v} for k, v in ent_vdb.written.items()},
        "node_tracked": {k: v["chunk_ids"] for k, v in ent_kv.written.items()},
        "prompts": prompts,
    }


def _rel_hexrag(src: str, tgt: str, frags: list[dict[str, Any]], edge: dict[str, Any] | None,
                row: Any, nodes: dict[str, Any], node_rows: dict[str, Any],
                s: MergeSettings) -> dict[str, Any]:
    prompts: list[str] = []

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return _answer(prompt)

    m = asyncio.run(merge_relation(
        src, tgt, frags, edge, row,
        {n: (nodes.get(n), node_rows.get(n)) for n in (src, tgt)},
        settings=s, tokenizer=TOK, summarize=summarize,
    ))
    assert m is not None
    if m.edge is None:
        return {"edge": None, "vector": None, "stale": [], "tracked": m.tracked_chunk_ids,
                "nodes": {}, "node_vectors": {}, "node_tracked": {}, "prompts": prompts}
    return {
        "edge": m.edge, "vector": m.vector, "stale": m.stale_vector_ids,
        "tracked": m.tracked_chunk_ids,
        "nodes": {u.name: u.node for u in m.endpoints if u.node is not None},
        "node_vectors": {u.name: u.vector for u in m.endpoints if u.vector is not None},
        "node_tracked": {u.name: u.tracked_chunk_ids for u in m.endpoints
                         if u.tracked_chunk_ids is not None},
        "prompts": prompts,
    }


rel_fragment = st.fixed_dictionaries({
    "src_id": st.just("Acme"), "tgt_id": st.just("Mailchimp"),
    "weight": st.sampled_from([1.0, 1.0, 2.5]),
    "description": descs.filter(bool),
    "keywords": st.sampled_from(["sync", "sync, contacts", " email ,sync", "", "a,b,,c"]),
    "source_id": chunk_ids, "file_path": paths, "timestamp": st.integers(1, 4),
})
stored_edge = st.one_of(st.none(), st.fixed_dictionaries({
    "weight": st.sampled_from([1.0, 3.0]),
    "description": st.lists(descs, min_size=1, max_size=3).map("<SEP>".join),
    "keywords": st.sampled_from(["sync", "sync<SEP>old", "x,y"]),
    "source_id": st.lists(st.one_of(chunk_ids, st.just("UNKNOWN")), max_size=4).map(
        "<SEP>".join),
    "file_path": st.lists(paths, max_size=3).map("<SEP>".join),
}))
endpoint_node = st.one_of(st.none(), st.fixed_dictionaries({
    "entity_type": st.just("org"), "description": st.just("Known."),
    "source_id": st.lists(chunk_ids, max_size=3).map("<SEP>".join),
    "file_path": st.just("a.md"),
}))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rel_fragment, min_size=1, max_size=6), stored_edge, tracking,
       endpoint_node, endpoint_node, tracking, tracking, merge_settings,
       st.integers(1, 6), st.booleans())
def test_relation_merge_equals_lightrags(
    frags: list[dict[str, Any]], edge: dict[str, Any] | None, row: Any,
    src_node: dict[str, Any] | None, tgt_node: dict[str, Any] | None,
    src_row: Any, tgt_row: Any, s: MergeSettings, rel_limit: int, flip: bool,
) -> None:
    from dataclasses import replace

    s = replace(s, max_source_ids_relation=rel_limit)
    src, tgt = ("Mailchimp", "Acme") if flip else ("Acme", "Mailchimp")
    nodes = {k: {"entity_id": k, **v} for k, v in (("Acme", src_node), ("Mailchimp", tgt_node))
             if v is not None}
    node_rows = {k: v for k, v in (("Acme", src_row), ("Mailchimp", tgt_row)) if v is not None}
    args = (src, tgt, frags, edge, row, nodes, node_rows, s)
    try:
        want: Any = _rel_lightrag(*args)
    except ValueError as exc:
        want = type(exc).__name__
    try:
        got: Any = _rel_hexrag(*args)
    except ValueError as exc:
        got = type(exc).__name__
    assert got == want
