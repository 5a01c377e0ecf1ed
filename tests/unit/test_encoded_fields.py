"""The one reader of hexrag's encoded ``file_path`` segments (scope oracle, CLI table,
stand-in LLM)."""

from __future__ import annotations

from hexrag.cli_documents_table import readable_file_path
from hexrag.core.encoded_fields import encoded_fields
from hexrag.core.scope import parse_file_path


def test_fields_values_with_colons_and_renames() -> None:
    tokens = "product_id:p1:category:a:b:source:https://x".split(":")
    assert encoded_fields(tokens, ("product_id", "category", "source")) == {
        "product_id": "p1", "category": "a:b", "source": "https://x",
    }
    # a key right after a key is the first key's value; tokens before any key are dropped
    assert encoded_fields(["lead", "source", "category", "x"], ("source", "category")) == {
        "source": "category:x"
    }
    # the last assignment wins when two keys share a name
    rename = {"category": "category_id", "category_id": "category_id"}
    tokens = ["category", "a", "category_id", "b", "category", "c"]
    assert encoded_fields(tokens, rename) == {"category_id": "c"}
    assert encoded_fields([], ("source",)) == {}


def test_its_users_read_the_same_fields() -> None:
    path = "product_id:p1:category:crm:source:a.md<SEP>plain.txt"
    assert readable_file_path(path) == "p1 / crm / a.md; plain.txt"
    [meta] = parse_file_path(path)
    assert (meta.product_id, meta.category_id) == ("p1", "crm")
