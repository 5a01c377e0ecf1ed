"""What the digests and the answer comparison leave out, and what they never do."""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.transfer.compare import compare_answers
from hexrag.transfer.digests import kv_content, record_digest

ROW = {"chunk_ids": ["c-1", "c-2"], "count": 2, "create_time": 1, "update_time": 2,
       "_id": "Acme"}


def _d(section: str, key: str, value: dict[str, Any]) -> int:
    return record_digest(section, (key, value))


def test_key_echoes_and_write_stamps_are_not_content() -> None:
    pg = {"id": "Acme", "chunk_ids": ["c-1", "c-2"], "count": 2, "create_time": 9,
          "update_time": 9}
    assert _d("entity_chunks", "Acme", ROW) == _d("entity_chunks", "Acme", pg)
    assert kv_content("entity_chunks", "Acme", ROW) == {"chunk_ids": ["c-1", "c-2"], "count": 2}


@pytest.mark.parametrize("change", [
    {"chunk_ids": ["c-1", "c-3"]}, {"count": 3}, {"_id": "Other"}, {"extra": None},
])
def test_any_other_change_is_content(change: dict[str, Any]) -> None:
    assert _d("entity_chunks", "Acme", ROW) != _d("entity_chunks", "Acme", {**ROW, **change})


def test_full_docs_unset_fields_only_at_their_unset_value() -> None:
    doc = {"content": "t", "file_path": "a.txt", "_id": "d"}
    read: dict[str, Any] = {**doc, "id": "d", "sidecar_location": None, "chunk_options": {},
            "process_options": None, "parse_engine": None, "content_hash": None,
            "parse_format": None}
    assert _d("full_docs", "d", doc) == _d("full_docs", "d", read)
    assert _d("full_docs", "d", doc) != _d("full_docs", "d", {**doc, "parse_engine": "x"})
    assert _d("full_docs", "d", doc) != _d("full_docs", "d", {**doc, "file_path": ""})
    # the unset values are only forgiven in full_docs
    assert _d("entity_chunks", "d", {"x": None}) != _d("entity_chunks", "d", {})


def _rel(src: str, tgt: str, weight: float) -> dict[str, Any]:
    return {"src_id": src, "tgt_id": tgt, "weight": weight, "description": f"{src}-{tgt}"}


def test_answers_equal_up_to_the_graph_ties_only() -> None:
    a: dict[str, Any] = {"entities": [{"entity_name": "E"}],
         "relationships": [_rel("E", "A", 1.0), _rel("E", "B", 1.0), _rel("E", "C", 0.5)],
         "chunks": [{"chunk_id": "c-1"}, {"chunk_id": "c-2"}], "references": []}
    assert compare_answers(a, dict(a))[0] == "same"
    tied = {**a, "relationships": [a["relationships"][1], a["relationships"][0],
                                   a["relationships"][2]],
            "chunks": [{"chunk_id": "c-2"}, {"chunk_id": "c-1"}]}
    assert compare_answers(a, tied)[0] == "ties"
    across = {**a, "relationships": [a["relationships"][2], a["relationships"][0],
                                     a["relationships"][1]]}
    assert compare_answers(a, across)[0] == "differ"
    changed = {**a, "relationships": [_rel("E", "A", 1.0), _rel("E", "B", 1.0),
                                      _rel("E", "D", 0.5)]}
    assert compare_answers(a, changed)[0] == "differ"
    fewer = {**a, "chunks": [{"chunk_id": "c-1"}]}
    assert compare_answers(a, fewer)[0] == "differ"
    assert compare_answers(a, {**a, "entities": [{"entity_name": "F"}]})[0] == "differ"
