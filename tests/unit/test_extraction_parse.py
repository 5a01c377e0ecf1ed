"""hexrag's parse of the LLM's extraction answer equals LightRAG 1.5.7's
``_process_extraction_result`` on generated, malformed answers."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.core.ingest.extraction import (
    fix_tuple_delimiter_corruption,
    normalize_extracted_info,
    parse_extraction,
)
from hexrag.devtools.lightrag_data import require_lightrag

require_lightrag()

from lightrag.operate import _process_extraction_result  # noqa: E402
from lightrag.utils import (  # noqa: E402
    fix_tuple_delimiter_corruption as lr_fix,
)
from lightrag.utils import (  # noqa: E402
    normalize_extracted_info as lr_normalize,
)

logging.getLogger("lightrag").setLevel(logging.CRITICAL)

D = "<|#|>"
words = st.sampled_from([
    "Acme CRM", "Mailchimp", "组织", "产品 中心", '"Quoted"', "'single'", "“中文”", "《书》",
    "Ｆｕｌｌ", "１２", "12", "1.2", "1.2.3", "12.34", ".123", "123456", "a.b", "<p>x</p>",
    "x<br/>y", "&amp;", "  spaced  ",
    "Type, Other", "org", "person", "__proto__", "(bad)", "sync，data", "\u00a0nb", "—dash",
    "x" * 300, "中" * 200, "", "\x00ctl", "a\tb",
])
markers = st.sampled_from([
    D, D, D, "<|##|>", "<#>", "|#|>", "<|#|", "<|>", "<||>", "<|\\#|>", "<X|#|>", "<|#:",
    "||#||", "<|#|>|", "<||", " ",
])
kinds = st.sampled_from(["entity", "relation", "relationship", "Entity", "ENTITY", "rel", ""])


@st.composite
def record(draw: Any) -> str:
    n = draw(st.integers(1, 6))
    parts = [draw(kinds)] + [draw(words) for _ in range(n)]
    out = parts[0]
    for p in parts[1:]:
        out += draw(markers) + p
    return out


@st.composite
def answer(draw: Any) -> str:
    recs = draw(st.lists(record(), max_size=8))
    seps = st.sampled_from(["\n", "\n\n", D, "<|COMPLETE|>", "<|complete|>", " "])
    out = ""
    for r in recs:
        out += r + draw(seps)
    if draw(st.booleans()):
        out += "<|COMPLETE|>"
    return out


def _lightrag(text: str) -> tuple[dict[str, list[dict[str, Any]]], dict[Any, list[Any]]]:
    nodes, edges = asyncio.run(_process_extraction_result(text, "chunk-1", 7, "f.md"))
    return nodes, edges


def _hexrag(text: str) -> tuple[dict[str, list[dict[str, Any]]], dict[Any, list[Any]]]:
    nodes, edges = parse_extraction(text, "chunk-1", 7, "f.md")
    return ({k: [asdict(e) for e in v] for k, v in nodes.items()},
            {k: [asdict(r) for r in v] for k, v in edges.items()})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer())
def test_parse_equals_lightrags(text: str) -> None:
    assert _hexrag(text) == _lightrag(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(words, markers), max_size=12).map("".join), st.booleans())
def test_cleaning_and_delimiter_repair_equal_lightrags(text: str, inner: bool) -> None:
    assert normalize_extracted_info(text, inner) == lr_normalize(text, inner)
    assert fix_tuple_delimiter_corruption(text, "#", D) == lr_fix(text, "#", D)


def test_a_well_formed_answer() -> None:
    text = (f"entity{D}Acme CRM{D}product{D}A CRM.\n"
            f"entity{D}Mailchimp{D}organization{D}Email marketing.\n"
            f"relation{D}Acme CRM{D}Mailchimp{D}sync, contacts{D}Syncs contacts.\n<|COMPLETE|>")
    nodes, edges = parse_extraction(text, "chunk-1", 7)
    assert list(nodes) == ["Acme CRM", "Mailchimp"]
    (rel,) = edges[("Acme CRM", "Mailchimp")]
    assert rel.keywords == "sync, contacts" and rel.weight == 1.0
