"""Reading hexrag's encoded ``file_path`` segments: ``product_id:<p>:category:<c>:source:<s>``.

One reader of the ``key:value`` tokens, shared by the scope oracle (:mod:`hexrag.core.scope`),
the documents table of the CLI and the offline stand-in LLM. Pure: imports nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

__all__ = ["encoded_fields"]


def encoded_fields(tokens: Iterable[str], keys: Collection[str]) -> dict[str, str]:
    """The ``key -> value`` pairs of a ``:``-split encoded segment.

    A token that is one of ``keys`` starts a field (unless it comes right after another key,
    where it is that key's value); the tokens up to the next key, joined by ``:``, are its
    value (so a value may hold ``:``). Tokens before the first key are dropped; a repeated
    key keeps its last value. With a mapping for ``keys``, each key is stored under
    ``keys[key]`` (the last assignment wins when two keys share a name).
    """
    rename = keys if isinstance(keys, Mapping) else None
    found: dict[str, str] = {}
    key: str | None = None
    value: list[str] = []

    def close() -> None:
        if key is not None:
            found[rename[key] if rename is not None else key] = ":".join(value)

    for token in tokens:
        if token in keys and (key is None or value):
            close()
            key, value = token, []
        else:
            value.append(token)
    close()
    return found
