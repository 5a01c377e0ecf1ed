"""Tokens: the :class:`Tokenizer` port and LightRAG 1.5.7's token-budget truncation, stated plainly.

The core reads no file and loads no model: a tokenizer is a port, always given to the engine
and the ingestor (the default one, tiktoken's ``o200k_base`` loaded offline, lives in
:mod:`hexrag.adapters.tiktoken_offline`; the composition root,
:func:`hexrag.bootstrap.compose_engine`, passes it). There is no default registered here and
no process-wide state: a tokenizer that memoises counts owns its memo (and may offer
``clear_caches()`` to empty it).

This module states LightRAG's rules with nothing but ``encode``:

* :func:`truncate_by_token_limit` - LightRAG's base ``Tokenizer.truncate_by_token_limit``
  (``_bounded_prefix_span``: a bracketing search on prefix encodes);
* :func:`truncate_list_by_token_size` - LightRAG's ``utils.truncate_list_by_token_size``
  (the safe prefix of the joined items, ``_rendered_prefix_item_count``, the re-verification
  that shrinks the count until the kept items' own text fits).

A tokenizer may offer faster forms of the same rules, used when present (the tiktoken
adapter has all of them, equal to LightRAG's tiktoken algorithms and property-tested against
a plain port of LightRAG in ``tests/unit/test_tokenizer.py``):

* ``count_tokens(text) -> int`` (``len(encode(text))``);
* ``truncate_by_token_limit(text, max_tokens) -> int`` (LightRAG's tokenizer-specific end);
* ``count_lines(lines, stop_above=None) -> int | None`` (tokens of ``"\\n".join(lines)``;
  with ``stop_above``, any number above it once the count certainly is);
* ``truncate_list(rendered, separator, max_tokens)`` - the number of kept items when already
  known, else ``(safe_end, prefix_count)`` for the re-verification below (``prefix_count``
  is only compared with ``max_tokens``: it may answer any number above it for a prefix that
  certainly exceeds it).

The "certainly exceeds" answers let a fast form stop tokenizing a huge line (a stored 1 MB
field) once the budget is certainly exceeded - for tiktoken a text of ``n`` characters has at
least ``ceil(n / max_token_bytes)`` tokens - without changing any result: LightRAG's rules
only ever compare these counts with the budget.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from hexrag.domain.errors import HexragError

__all__ = [
    "TokenBudgetError",
    "Tokenizer",
    "count_tokens",
    "lines_tokens",
    "truncate_by_token_limit",
    "truncate_list_by_token_size",
]


class TokenBudgetError(HexragError):
    """Not even the first code point of the text fits the token budget (LightRAG's error)."""

    def __init__(self, max_tokens: int, code_point_token_count: int, preview: str) -> None:
        self.max_tokens = max_tokens
        self.code_point_token_count = code_point_token_count
        self.preview = preview
        super().__init__(
            f"the first code point needs {code_point_token_count} tokens, "
            f"more than the budget of {max_tokens}: {preview!r}"
        )


@runtime_checkable
class Tokenizer(Protocol):
    """What the core needs from a tokenizer. Implementations must be thread-safe."""

    def encode(self, text: str) -> list[int]:
        """The tokens of ``text``."""
        ...

    def decode(self, tokens: Sequence[int]) -> str:
        """The text of ``tokens``."""
        ...


# --------------------------------------------------------------------------------------
# Counting and truncation: LightRAG's rules
# --------------------------------------------------------------------------------------


def count_tokens(text: str, tokenizer: Tokenizer) -> int:
    """``len(tokenizer.encode(text))`` (its ``count_tokens`` when it has one)."""
    counter = getattr(tokenizer, "count_tokens", None)
    if counter is not None:
        return int(counter(text))
    return len(tokenizer.encode(text))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (which tiktoken cannot encode as is).

    ASCII text cannot (``isascii`` reads a flag); for the rest, the strict UTF-16 encoder
    (one C pass, several times faster than a regex scan) fails exactly on lone surrogates.
    """
    if text.isascii():
        return False
    try:
        text.encode("utf-16-le")
    except UnicodeEncodeError:
        return True
    return False


def _generic_truncate(encode: Callable[[str], list[int]], content: str, max_tokens: int) -> int:
    """LightRAG's base ``Tokenizer.truncate_by_token_limit(...).end`` (encode-only search)."""
    if max_tokens <= 0:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    if not content:
        return 0
    full_tokens = len(encode(content))
    if full_tokens <= max_tokens:
        return len(content)
    chars_per_token = len(content) / full_tokens
    # _bounded_prefix_span(content, 0, max_tokens, chars_per_token)
    remaining_len = len(content)
    seed = min(remaining_len, max(1, int(max_tokens * chars_per_token)))
    good = 0
    bad = remaining_len + 1
    if len(encode(content[:seed])) <= max_tokens:
        good = seed
        if seed == remaining_len:
            return good
        candidate = seed
        while True:
            candidate = min(remaining_len, candidate * 2)
            if len(encode(content[:candidate])) > max_tokens:
                bad = candidate
                break
            good = candidate
            if candidate == remaining_len:
                return good
    else:
        bad = seed
        candidate = seed
        while candidate > 1:
            candidate //= 2
            if len(encode(content[:candidate])) <= max_tokens:
                good = candidate
                break
            bad = candidate
    while bad - good > 1:
        midpoint = (good + bad) // 2
        if len(encode(content[:midpoint])) <= max_tokens:
            good = midpoint
        else:
            bad = midpoint
    if good > 0:
        return good
    first_cp_tokens = len(encode(content[:1]))
    if first_cp_tokens > max_tokens:
        raise TokenBudgetError(max_tokens, first_cp_tokens, content[:80])
    return 1


def truncate_by_token_limit(tokenizer: Tokenizer, text: str, max_tokens: int) -> int:
    """End offset of LightRAG's safe prefix of ``text`` within ``max_tokens``.

    The tokenizer's own ``truncate_by_token_limit`` when it has one (LightRAG's tiktoken
    algorithm for tiktoken), else LightRAG's generic search (:func:`_generic_truncate`). Raises
    ``ValueError`` for ``max_tokens <= 0`` and :class:`TokenBudgetError` when not even the
    first code point fits.
    """
    own = getattr(tokenizer, "truncate_by_token_limit", None)
    if own is not None:
        return int(own(text, max_tokens))
    return _generic_truncate(tokenizer.encode, text, max_tokens)


def _item_ends(rendered: Sequence[str], sep_len: int) -> list[int]:
    """``ends[k] = len(separator.join(rendered[:k]))`` for k = 0..n."""
    ends = [0]
    total = 0
    for i, item in enumerate(rendered):
        total += (sep_len if i > 0 else 0) + len(item)
        ends.append(total)
    return ends


def lines_tokens(
    lines: Sequence[str], tokenizer: Tokenizer, *, stop_above: int | None = None
) -> int | None:
    """Tokens of ``"\\n".join(lines)`` from the tokenizer's ``count_lines``, or ``None``
    when it has none or cannot tell (callers then count the joined text). With ``stop_above``
    the answer may be any number above it once the count certainly is."""
    counter = getattr(tokenizer, "count_lines", None)
    if counter is None:
        return None
    result: int | None = counter(lines, stop_above=stop_above)
    return result


def truncate_list_by_token_size(
    rendered: Sequence[str], separator: str, max_tokens: int, tokenizer: Tokenizer
) -> int:
    """How many leading items LightRAG 1.5.7 keeps within ``max_tokens``.

    ``rendered`` are the items exactly as they will be serialised and ``separator`` joins them;
    the separator's tokens count. The result ``k`` is such that ``separator.join(rendered[:k])``
    encodes to at most ``max_tokens`` tokens and equals what LightRAG's
    ``truncate_list_by_token_size`` keeps (its safe-prefix search is not a plain "longest
    fitting prefix": BPE counts are not monotonic). ``max_tokens <= 0`` or no items -> 0; a
    first code point that alone exceeds the budget -> 0.
    """
    n = len(rendered)
    if max_tokens <= 0 or n == 0:
        return 0
    fast = getattr(tokenizer, "truncate_list", None)
    if fast is not None:
        known: Any = fast(rendered, separator, max_tokens)
        if isinstance(known, int):
            return known
        safe_end, count = known
    else:
        full_text = separator.join(rendered)
        encode = tokenizer.encode
        try:
            safe_end = truncate_by_token_limit(tokenizer, full_text, max_tokens)
        except TokenBudgetError:
            return 0

        def count(end: int) -> int:
            return len(encode(full_text[:end]))

    ends = _item_ends(rendered, len(separator))
    # _rendered_prefix_item_count: largest k whose joined prefix fits in safe_end characters.
    k = bisect.bisect_right(ends, safe_end) - 1
    # LightRAG re-verifies the kept items' own serialisation and shrinks k until it fits.
    while k > 0:
        if ends[k] == 0 or count(ends[k]) <= max_tokens:
            break
        k -= 1
    return k
