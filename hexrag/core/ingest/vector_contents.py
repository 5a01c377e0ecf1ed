"""LightRAG 1.5.7's entity and relation vector contents (the text that gets embedded), once.

* entity: ``"<name>\\n<description>"``;
* relation: ``"<keywords>\\t<src>\\n<tgt>\\n<description>"`` (extraction merges, cache
  rebuilds, ``acreate_relation``, ``amerge_entities``);
* an edited relation: ``"<src>\\t<tgt>\\n<keywords>\\n<description>"`` - LightRAG's
  ``aedit_relation`` and ``aedit_entity`` (rename) write this other order, so hexrag does too.

With a tokenizer and a positive ``limit`` (the embedding model's token limit) the text is cut
to that many tokens, as LightRAG's merges do; manual graph edits pass none (LightRAG does not
cut them either).
"""

from __future__ import annotations

from hexrag.core.tokenizer import Tokenizer, truncate_by_token_limit

__all__ = ["edited_relation_vector_content", "entity_vector_content", "relation_vector_content"]


def _cut(text: str, tokenizer: Tokenizer | None, limit: int | None) -> str:
    if not text or tokenizer is None or limit is None or int(limit) <= 0:
        return text
    return text[: truncate_by_token_limit(tokenizer, text, int(limit))]


def entity_vector_content(name: str, description: str, tokenizer: Tokenizer | None = None,
                          limit: int | None = None) -> str:
    """``"<name>\\n<description>"``, cut to ``limit`` tokens when a tokenizer is given."""
    return _cut(f"{name}\n{description}", tokenizer, limit)


def relation_vector_content(keywords: str, src: str, tgt: str, description: str,
                            tokenizer: Tokenizer | None = None, limit: int | None = None
                            ) -> str:
    """``"<keywords>\\t<src>\\n<tgt>\\n<description>"``, cut to ``limit`` tokens when a
    tokenizer is given."""
    return _cut(f"{keywords}\t{src}\n{tgt}\n{description}", tokenizer, limit)


def edited_relation_vector_content(src: str, tgt: str, keywords: str, description: str) -> str:
    """``"<src>\\t<tgt>\\n<keywords>\\n<description>"``: LightRAG's order after an edit."""
    return f"{src}\t{tgt}\n{keywords}\n{description}"
