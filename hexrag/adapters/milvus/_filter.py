"""Milvus boolean filter expressions built from user values.

Every user value (a scope value, a record id) reaches a filter string through
:func:`quote_string` and nothing else. Milvus' filter templating (``filter_params``) would
avoid string literals altogether, but Milvus Lite 3.x rejects templates (``{name}`` is a
parse error there), and the adapter must behave the same on Lite and on a server, so
escaping is the one mechanism. The tests feed the output back into Milvus Lite's own
tokenizer and run attack values through real queries.

Milvus string literals (the server's ``Plan.g4`` grammar and Milvus Lite's tokenizer agree)
are double-quoted; a backslash starts an escape; a raw CR or LF ends the literal with an
error. ``%`` and ``_`` are only special inside ``like`` patterns, which this module never
builds, so they need no escaping.
"""

from __future__ import annotations

from collections.abc import Iterable

from hexrag.domain.scope import QueryScope

__all__ = ["SCOPE_COLUMNS", "ids_filter", "quote_string", "scope_filter"]

# QueryScope field -> the ARRAY<VARCHAR> column holding the record's known values.
SCOPE_COLUMNS: dict[str, str] = {
    "product_id": "product_ids",
    "category_id": "category_ids",
    "doc_ids": "doc_ids",
}

_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def quote_string(value: str) -> str:
    """``value`` as a double-quoted Milvus string literal that denotes exactly ``value``.

    Backslash and double quote are backslash-escaped; newline, carriage return and tab
    become ``\\n``, ``\\r``, ``\\t`` (a raw line break is illegal inside a literal). Every
    other character, non-ASCII included, is kept as is.
    """
    if not isinstance(value, str):
        raise TypeError(f"filter values must be strings, got {type(value).__name__}")
    return '"' + value.translate(_ESCAPES) + '"'


def _list_literal(values: Iterable[str]) -> str:
    return "[" + ", ".join(quote_string(v) for v in values) + "]"


def scope_filter(scope: QueryScope | None) -> str:
    """The pre-filter of :func:`hexrag.core.scope.prefilter_match` as a Milvus expression.

    Per scoped field: the record knows no value for it (empty array) or one of its values is
    admitted. Fields are AND-ed. ``None`` or an empty scope gives ``""`` (no filter).
    """
    if scope is None or scope.is_empty:
        return ""
    parts = []
    for name, admitted in scope.fields().items():
        column = SCOPE_COLUMNS[name]
        parts.append(
            f"(array_length({column}) == 0 or "
            f"array_contains_any({column}, {_list_literal(admitted)}))"
        )
    return " and ".join(parts)


def ids_filter(ids: Iterable[str], *, field: str = "id") -> str:
    """``id in [...]`` over the distinct ``ids`` (first-appearance order)."""
    unique = list(dict.fromkeys(ids))
    return f"{field} in {_list_literal(unique)}"
