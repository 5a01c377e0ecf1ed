"""Keyword extraction: LightRAG 1.5.7's LLM extraction and cache, plus a deterministic fallback.

* :func:`parse_keywords_payload` is ``operate.py:_parse_keywords_payload`` /
  ``_normalize_keyword_list`` (with ``utils.py:remove_think_tags`` and
  ``strip_markdown_code_fence``).
* :func:`build_keyword_prompt` renders ``PROMPTS["keywords_extraction"]``.
* :func:`extract_keywords` is ``operate.py:extract_keywords_only`` (cache key, cache read, LLM call,
  cache write) with one deliberate difference: when there is no LLM, the LLM fails, or its answer
  yields no keyword, hexrag uses :func:`basic_keywords` instead of LightRAG's empty lists (which end
  in ``[no-context]`` for queries of 50+ characters).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hexrag.core.hashing import keyword_cache_key
from hexrag.core.query.prompts import KEYWORDS_EXTRACTION, KEYWORDS_EXTRACTION_EXAMPLES
from hexrag.ports.cache import Cache
from hexrag.ports.llm import LLM

__all__ = [
    "MAX_BASIC_KEYWORDS",
    "KeywordResult",
    "basic_keywords",
    "build_keyword_prompt",
    "extract_keywords",
    "parse_keywords_payload",
    "remove_think_tags",
    "strip_markdown_code_fence",
]

# --------------------------------------------------------------------------------------
# Parsing (LightRAG-exact)
# --------------------------------------------------------------------------------------

_ORPHAN_THINK_END = re.compile(r"^((?!<think>).)*?</think>", re.DOTALL)
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_CODE_FENCE_PATTERN = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_KEYWORD_STRING_SPLIT = re.compile(r"[\n,;]+")


def remove_think_tags(text: str) -> str:
    """Drop ``<think>…</think>`` blocks and an orphan prefix ending in ``</think>``; strip."""
    text = _ORPHAN_THINK_END.sub("", text)
    text = _THINK_BLOCK.sub("", text)
    return text.strip()


def strip_markdown_code_fence(text: str) -> str:
    """The inside of a surrounding markdown code fence (optionally ``json``), else ``text``."""
    match = _CODE_FENCE_PATTERN.match(text)
    return match.group(1) if match else text


def _normalize_keyword_list(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [p.strip() for p in _KEYWORD_STRING_SPLIT.split(raw) if p and p.strip()]
    if not isinstance(raw, list):
        return []
    out: list[str] = []
    for value in raw:
        if isinstance(value, str):
            cleaned = value.strip()
            if cleaned:
                out.append(cleaned)
    return out


def parse_keywords_payload(
    result: Any, repair_json: Callable[[str], Any] | None = None
) -> tuple[bool, list[str], list[str]]:
    """``(valid, high_level_keywords, low_level_keywords)`` from a keyword LLM answer.

    Exactly LightRAG's ``_parse_keywords_payload``: ``None`` is invalid; an object with
    ``model_dump()`` or a dict is used as the payload; a string has its think tags and a
    surrounding code fence removed and is parsed with ``json.loads``, then ``repair_json``
    (LightRAG's ``json_repair.loads``, which the composition root injects; without it a string
    that is not strict JSON is invalid).
    The payload must be a dict. Each list: ``None`` -> ``[]``; a string is split on ``[\\n,;]+``;
    another non-list -> ``[]``; string items are stripped and kept when non-empty, other items
    dropped. No de-duplication, no lower-casing.
    """
    payload: Any
    if result is None:
        return False, [], []
    model_dump = getattr(result, "model_dump", None)
    if callable(model_dump):
        payload = model_dump()
    elif isinstance(result, dict):
        payload = result
    elif isinstance(result, str):
        cleaned = strip_markdown_code_fence(remove_think_tags(result))
        try:
            payload = json.loads(cleaned)
        except json.JSONDecodeError:
            if repair_json is None:
                return False, [], []
            try:
                payload = repair_json(cleaned)
            except Exception:
                return False, [], []
    else:
        return False, [], []
    if not isinstance(payload, dict):
        return False, [], []
    return (
        True,
        _normalize_keyword_list(payload.get("high_level_keywords")),
        _normalize_keyword_list(payload.get("low_level_keywords")),
    )


def build_keyword_prompt(query: str, language: str) -> str:
    """LightRAG's keyword-extraction prompt for ``query`` (keywords requested in ``language``)."""
    return KEYWORDS_EXTRACTION.format(
        query=query, examples="\n".join(KEYWORDS_EXTRACTION_EXAMPLES), language=language
    )


# --------------------------------------------------------------------------------------
# Deterministic extraction
# --------------------------------------------------------------------------------------

MAX_BASIC_KEYWORDS = 10
"""At most this many keywords per list from :func:`basic_keywords`."""

_MAX_KEYWORD_CHARS = 128
_MAX_PHRASE_WORDS = 3

_STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each either else etc even ever every few for from further
    get gets got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its
    itself just let's like many may me might more most much must mustn't my myself no nor not
    now of off on once one only or other ought our ours ourselves out over own please per
    rather really same shall shan't she she'd she'll she's should shouldn't so some such than
    that that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those though through thus to too under until up upon us very via
    was wasn't we we'd we'll we're we've were weren't what what's whatever when when's where
    where's whether which while who who's whom whose why why's will with within without won't
    would wouldn't yes yet you you'd you'll you're you've your yours yourself yourselves
    tell explain describe show give list find know want need help anything something
    everything nothing thing things kind sort way ways lot lots regarding concerning vs versus
    compare summarize summarise define discuss identify outline provide analyze analyse
    """.split()
)
# Lower-case particles that may sit inside a capitalised name ("Bank of America").
_NAME_CONNECTORS = frozenset("of de du des del da di van von der den la le y".split())

_QUOTED = re.compile(
    r'"([^"]+)"|“([^”]+)”|‘([^’]+)’|«([^»]+)»|「([^」]+)」|『([^』]+)』|(?<!\w)\'([^\'\n]+)\'(?!\w)'
)
_WORD = re.compile(r"\w+(?:[-'’./+]\w+)*")
_POSSESSIVE = re.compile(r"['’][sS]$")
_CAMEL = re.compile(r"[a-z][A-Z]")
_SENTENCE_END = frozenset(".!?\n。！？")


def _is_uncased_letter(ch: str) -> bool:
    """A letter of a script without case (Han, Kana, Hangul, Arabic, Thai, ...)."""
    return ch.isalpha() and ch.lower() == ch and ch.upper() == ch


def _script_runs(word: str) -> list[tuple[int, str, bool]]:
    """Split ``word`` into (offset, text, uncased) runs; combining marks stay with their base."""
    runs: list[tuple[int, str, bool]] = []
    start = 0
    current: bool | None = None
    for i, ch in enumerate(word):
        if unicodedata.category(ch).startswith("M") and current is not None:
            continue
        kind = _is_uncased_letter(ch)
        if current is None:
            current = kind
        elif kind != current:
            runs.append((start, word[start:i], current))
            start, current = i, kind
    if current is not None:
        runs.append((start, word[start:], current))
    return runs


@dataclass(slots=True)
class _Tok:
    text: str  # possessive removed
    start: int
    joined: bool  # only whitespace separates it from the previous token
    sentence_start: bool
    ends_phrase: bool  # possessive: nothing joins after it
    uncased: bool


def _tokens(query: str, taken: list[tuple[int, int]]) -> list[_Tok]:
    tokens: list[_Tok] = []
    prev_end = 0
    q = 0  # index into taken (sorted, non-overlapping spans)
    for m in _WORD.finditer(query):
        while q < len(taken) and taken[q][1] <= m.start():
            q += 1
        if q < len(taken) and taken[q][0] <= m.start():
            prev_end = -1  # a quoted phrase breaks adjacency
            continue
        gap = query[prev_end : m.start()] if prev_end >= 0 else "|"
        j = m.start() - 1
        while j >= 0 and query[j].isspace():
            j -= 1
        sentence_start = j < 0 or query[j] in _SENTENCE_END
        word = m.group()
        possessive = bool(_POSSESSIVE.search(word)) and len(word) > 2
        if possessive:
            word = word[:-2]
        runs = _script_runs(word)
        for i, (offset, text, uncased) in enumerate(runs):
            tokens.append(
                _Tok(
                    text=text,
                    start=m.start() + offset,
                    joined=(gap.strip() == "" and bool(tokens)) if i == 0 else False,
                    sentence_start=sentence_start and i == 0,
                    ends_phrase=possessive and i == len(runs) - 1,
                    uncased=uncased,
                )
            )
        prev_end = m.end()
    return tokens


def _is_acronym(text: str) -> bool:
    return sum(c.isupper() for c in text) >= 2 and not any(c.islower() for c in text)


def _is_specific(text: str, shouting: bool) -> bool:
    """Digits, CamelCase, acronyms, identifiers (``snake_case``, ``file.py``, ``a/b``)."""
    if any(c.isdigit() for c in text):
        return len(text) >= 2
    if "_" in text or "." in text or "/" in text:
        return True
    if shouting or text.lower() in _STOP_WORDS:
        return False
    return bool(_CAMEL.search(text)) or _is_acronym(text)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_KEYWORD_CHARS else text[:_MAX_KEYWORD_CHARS].rstrip()


def _dedup(items: list[tuple[int, str]], *, fold: bool) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for _, text in sorted(items, key=lambda x: x[0]):
        key = text.casefold() if fold else text
        if text and key not in seen:
            seen.add(key)
            out.append(text)
        if len(out) == MAX_BASIC_KEYWORDS:
            break
    return out


def basic_keywords(query: str) -> tuple[list[str], list[str]]:
    """Deterministic ``(hl, ll)`` keywords of ``query``, used when no LLM answer is usable.

    Rules, applied left to right:

    1. **Quoted phrases** (``"…"``, ``“…”``, ``‘…’``, ``'…'``, ``«…»``, ``「…」``, ``『…』``) are
       low-level keywords, verbatim (stripped); their words take no further part.
    2. Words (``\\w+`` joined by ``- ' ’ . / +``) lose a possessive ``'s``. A word mixing a
       script without letter case (CJK, Kana, Hangul, Arabic, Thai, ...) with other characters
       is split into runs of each kind.
    3. **Low-level** (specific things), as written:
       runs of uncased-script letters (there is no case to tell names from words);
       words with a digit (2+ characters), CamelCase words, acronyms (2+ capitals, no
       lower case), identifiers containing ``_``, ``.`` or ``/``;
       **capitalised names**: adjacent capitalised non-stop words (with ``of``, ``de``, ``van``
       ... between them) -- two or more words always, a single word when it does not open a
       sentence or carries a possessive ``'s``.
       In a query written in capitals (2/3 of its cased words are), only digits, identifiers
       and uncased runs count as specific.
    4. **High-level** (themes): the remaining words that are not stop words and have 2+
       characters, lower-cased, joined into phrases of up to three adjacent words (a stop word,
       punctuation or a low-level keyword ends a phrase).
    5. Both lists keep first-appearance order, drop duplicates (low-level case-insensitively),
       hold at most :data:`MAX_BASIC_KEYWORDS` items of at most 128 characters.
    6. When exactly one list is empty it takes a copy of the other, so every mode has something
       to search with (relation and entity descriptions mention both themes and names).
    7. When both are empty and the query has a word character, low-level is ``[query.strip()]``
       (LightRAG's own fallback for short queries), high-level stays empty.
    """
    stripped = query.strip()
    ll: list[tuple[int, str]] = []
    hl: list[tuple[int, str]] = []

    taken: list[tuple[int, int]] = []
    for m in _QUOTED.finditer(query):
        inner = next(g for g in m.groups() if g is not None).strip()
        taken.append((m.start(), m.end()))
        if re.search(r"\w", inner):
            ll.append((m.start(), _clip(inner)))

    tokens = _tokens(query, taken)
    # A query written in capitals: case says nothing, so no names or acronyms from it.
    cased = [t.text for t in tokens if not t.uncased and any(c.isalpha() for c in t.text)]
    shouting = len(cased) >= 3 and 3 * sum(_is_acronym(w) for w in cased) >= 2 * len(cased)

    def is_cap(t: _Tok) -> bool:
        return (
            not shouting
            and not t.uncased
            and t.text[:1].isupper()
            and t.text.lower() not in _STOP_WORDS
        )

    phrase: list[_Tok] = []

    def flush_phrase() -> None:
        for i in range(0, len(phrase), _MAX_PHRASE_WORDS):
            part = phrase[i : i + _MAX_PHRASE_WORDS]
            hl.append((part[0].start, _clip(" ".join(p.text.lower() for p in part))))
        phrase.clear()

    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        if tok.uncased:
            flush_phrase()
            ll.append((tok.start, _clip(tok.text)))
            i += 1
            continue
        if is_cap(tok):
            # Longest run of capitalised words, allowing connectors between two of them.
            j = i
            words = [tok]
            while not words[-1].ends_phrase:
                nxt = j + 1
                if nxt < n and tokens[nxt].joined and is_cap(tokens[nxt]):
                    words.append(tokens[nxt])
                    j = nxt
                    continue
                if (
                    nxt + 1 < n
                    and tokens[nxt].joined
                    and tokens[nxt].text.lower() in _NAME_CONNECTORS
                    and tokens[nxt].text.islower()
                    and not tokens[nxt].ends_phrase
                    and tokens[nxt + 1].joined
                    and is_cap(tokens[nxt + 1])
                ):
                    words += [tokens[nxt], tokens[nxt + 1]]
                    j = nxt + 1
                    continue
                break
            if (
                len(words) >= 2
                or not tok.sentence_start
                or tok.ends_phrase
                or _is_specific(tok.text, False)
            ):
                flush_phrase()
                name = query[words[0].start : words[-1].start + len(words[-1].text)]
                ll.append((tok.start, _clip(name)))
                i = j + 1
                continue
            # A lone capitalised word opening a sentence is an ordinary word.
        if _is_specific(tok.text, shouting):
            flush_phrase()
            ll.append((tok.start, _clip(tok.text)))
            i += 1
            continue
        lower = tok.text.lower()
        if lower in _STOP_WORDS or len(tok.text) < 2:
            flush_phrase()
            i += 1
            continue
        if phrase and not tok.joined:
            flush_phrase()
        phrase.append(tok)
        if tok.ends_phrase:
            flush_phrase()
        i += 1
    flush_phrase()

    hl_out = _dedup(hl, fold=False)
    ll_out = _dedup(ll, fold=True)
    if hl_out and not ll_out:
        ll_out = list(hl_out)
    elif ll_out and not hl_out:
        hl_out = list(ll_out)
    if not hl_out and not ll_out and re.search(r"\w", stripped):
        ll_out = [stripped]
    return hl_out, ll_out


# --------------------------------------------------------------------------------------
# Extraction with LLM and cache
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeywordResult:
    """Extracted keywords and where they came from.

    ``source``: ``"cache"`` (a stored LLM answer), ``"llm"`` (a fresh LLM answer) or ``"basic"``
    (:func:`basic_keywords`). ``llm_error`` says why an LLM answer was not used (``None`` when
    there was none to use, i.e. no LLM configured).
    """

    hl: list[str]
    ll: list[str]
    source: Literal["llm", "cache", "basic"]
    llm_error: str | None = None


def _basic(query: str, error: str | None) -> KeywordResult:
    hl, ll = basic_keywords(query)
    return KeywordResult(hl=hl, ll=ll, source="basic", llm_error=error)


async def extract_keywords(
    query: str,
    *,
    mode: str,
    llm: LLM | None,
    cache: Cache | None,
    language: str,
    identity_json: str,
    param_meta: Mapping[str, Any],
    clock: Callable[[], int],
    repair_json: Callable[[str], Any] | None = None,
) -> KeywordResult:
    """Keywords of ``query`` as LightRAG's ``extract_keywords_only`` gets them, never empty-handed.

    1. No ``llm``: :func:`basic_keywords` (no cache access).
    2. Cache read (when ``cache`` is given; pass ``None`` when the LLM cache is disabled): key
       :func:`~hexrag.core.hashing.keyword_cache_key` ``(mode, query, language, identity_json)``
       with the ``"keyword"`` role identity. An entry whose ``return`` does not parse, or parses
       to two empty lists, is ignored.
    3. ``llm.complete(build_keyword_prompt(query, language), json_mode=True)``, parsed with
       :func:`parse_keywords_payload`.
    4. Cache write, as LightRAG's ``save_to_cache``, only when a list is non-empty:
       ``{"return": json.dumps({"high_level_keywords": hl, "low_level_keywords": ll}),
       "cache_type": "keywords", "chunk_id": None, "original_prompt": query,
       "queryparam": dict(param_meta), "create_time", "update_time", "_id": key}``, keeping the
       ``create_time`` of an entry read in step 2. (LightRAG's "skip when an identical ``return``
       exists" cannot apply: such an entry would have been a cache hit in step 2. LightRAG
       re-reads the key before writing; hexrag reuses the step-2 read, one round trip less.)
       ``param_meta`` is LightRAG's metadata: mode, response_type, top_k, chunk_top_k,
       max_entity_tokens, max_relation_tokens, max_total_tokens, user_prompt (``""`` if none),
       enable_rerank.

    **Deliberate difference from LightRAG:** when the LLM raises, or its answer gives no keyword
    at all (invalid JSON or two empty lists), LightRAG continues with empty lists (and answers
    ``[no-context]`` when the query has 50+ characters). hexrag returns
    :func:`basic_keywords` with ``source="basic"`` and ``llm_error`` set, and caches nothing.
    Cache errors propagate (as in LightRAG).
    """
    if llm is None:
        return _basic(query, None)

    key = keyword_cache_key(mode, query, language, identity_json)
    existing: dict[str, Any] | None = None
    if cache is not None:
        existing = (await cache.get_many([key]))[0]
        if existing and "return" in existing:
            valid, hl, ll = parse_keywords_payload(existing["return"], repair_json)
            if valid and (hl or ll):
                return KeywordResult(hl=hl, ll=ll, source="cache", llm_error=None)

    try:
        answer = await llm.complete(build_keyword_prompt(query, language), json_mode=True)
    except Exception as exc:
        return _basic(query, f"keyword LLM call failed: {type(exc).__name__}: {exc}")

    valid, hl, ll = parse_keywords_payload(answer, repair_json)
    if not (hl or ll):
        reason = "no keywords" if valid else "no JSON object"
        return _basic(query, f"keyword LLM answer gave {reason}: {str(answer)[:200]!r}")

    if cache is not None:
        now = clock()
        created = existing.get("create_time") if existing else None
        await cache.set_many(
            {
                key: {
                    "return": json.dumps({"high_level_keywords": hl, "low_level_keywords": ll}),
                    "cache_type": "keywords",
                    "chunk_id": None,
                    "original_prompt": query,
                    "queryparam": dict(param_meta),
                    "create_time": created if isinstance(created, int) else now,
                    "update_time": now,
                    "_id": key,
                }
            }
        )
    return KeywordResult(hl=hl, ll=ll, source="llm", llm_error=None)
