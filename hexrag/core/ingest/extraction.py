"""The LLM's entity/relation records, parsed as LightRAG 1.5.7 parses them (text mode).

:func:`parse_extraction` is LightRAG's ``_process_extraction_result`` (``operate.py``): the
answer is split into records on newlines and the completion delimiter; records glued with
the tuple delimiter are split again at ``<|#|>entity<|#|>`` / ``<|#|>relation(ship)<|#|>``; the
usual corruptions of the delimiter (``<|##|>``, ``<#>``, ``|#|>``, ...) are repaired
(:func:`fix_tuple_delimiter_corruption`); a 4-field ``entity`` record becomes an entity, a
5-field ``relation`` record a relation (a 5-field record prefixed ``entity`` is a mis-prefixed
relation); names, types, keywords and descriptions go through LightRAG's cleaning
(:func:`normalize_extracted_info`: HTML breaks, full-width letters, digits and symbols,
Chinese spacing, outer quotes, short numeric names dropped) and names are cut to 256
characters / 512 UTF-8 bytes. Every rule, including LightRAG's quirks (a record that starts
with neither keyword is re-prefixed ``entity<|``), is kept so the graph hexrag builds is
LightRAG's; ``tests/unit/test_extraction_parse.py`` proves the parse equal to LightRAG's own
function on generated, malformed answers.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

__all__ = [
    "COMPLETION_DELIMITER",
    "TUPLE_DELIMITER",
    "ExtractedEntity",
    "ExtractedRelation",
    "fix_tuple_delimiter_corruption",
    "normalize_extracted_info",
    "parse_extraction",
    "remove_think_tags",
    "sanitize_text_for_encoding",
]

TUPLE_DELIMITER = "<|#|>"
COMPLETION_DELIMITER = "<|COMPLETE|>"
ENTITY_NAME_MAX_LENGTH = 256
ENTITY_NAME_MAX_BYTES = 512
_RESERVED_ENTITY_TYPES = frozenset({"__proto__", "constructor", "prototype"})
_SURROGATE = re.compile(r"[\uD800-\uDFFF\uFFFE\uFFFF]")
_CONTROL = re.compile(r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]")
_FULL_WIDTH_LETTERS = str.maketrans(
    "ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
)
_FULL_WIDTH_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")
_CJK = "\u4e00-\u9fa5"


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """One entity record of one chunk."""

    entity_name: str
    entity_type: str
    description: str
    source_id: str
    file_path: str
    timestamp: int


@dataclass(frozen=True, slots=True)
class ExtractedRelation:
    """One relation record of one chunk (``weight`` is 1.0: text records carry none)."""

    src_id: str
    tgt_id: str
    weight: float
    description: str
    keywords: str
    source_id: str
    file_path: str
    timestamp: int


# --------------------------------------------------------------------------------------
# LightRAG's text cleaning (utils.py)
# --------------------------------------------------------------------------------------


def remove_think_tags(text: str) -> str:
    """LightRAG's ``remove_think_tags`` (every LLM answer passes it): an orphaned ``</think>``
    prefix and every ``<think>...</think>`` block removed, then stripped."""
    text = re.sub(r"^((?!<think>).)*?</think>", "", text, flags=re.DOTALL)
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL)
    return text.strip()


def split_by_markers(content: str | None, markers: list[str]) -> list[str]:
    """LightRAG's ``split_string_by_multi_markers``: split, strip, drop empty parts."""
    if not markers:
        return [content]  # type: ignore[list-item]
    content = content if content is not None else ""
    parts = re.split("|".join(re.escape(m) for m in markers), content)
    return [p.strip() for p in parts if p.strip()]


def sanitize_text_for_encoding(text: str) -> str:
    """LightRAG's ``sanitize_text_for_encoding``: strip, HTML-unescape, drop surrogates,
    non-characters and control characters (``\\t``, ``\\n``, ``\\r`` kept), strip."""
    if not text:
        return text
    text = text.strip()
    if not text:
        return text
    text = html.unescape(text)
    text = _SURROGATE.sub("", text)
    text = _CONTROL.sub("", text)
    return text.strip()


def normalize_extracted_info(name: str, remove_inner_quotes: bool = False) -> str:
    """LightRAG's ``normalize_extracted_info`` (see the module docstring)."""
    name = re.sub(r"</p\s*>|<p\s*>|<p/>", "", name, flags=re.IGNORECASE)
    name = re.sub(r"</br\s*>|<br\s*>|<br/>", "", name, flags=re.IGNORECASE)
    name = name.translate(_FULL_WIDTH_LETTERS).translate(_FULL_WIDTH_DIGITS)
    name = name.replace("－", "-").replace("＋", "+").replace("／", "/").replace("＊", "*")
    name = name.replace("（", "(").replace("）", ")")
    name = name.replace("—", "-").replace("－", "-")
    name = name.replace("　", " ")
    name = re.sub(rf"(?<=[{_CJK}])\s+(?=[{_CJK}])", "", name)
    name = re.sub(rf"(?<=[{_CJK}])\s+(?=[a-zA-Z0-9\(\)\[\]@#$%!&\*\-=+_])", "", name)
    name = re.sub(rf"(?<=[a-zA-Z0-9\(\)\[\]@#$%!&\*\-=+_])\s+(?=[{_CJK}])", "", name)
    if len(name) >= 2:
        for left, right in (('"', '"'), ("'", "'")):
            if name.startswith(left) and name.endswith(right) and left not in name[1:-1]:
                name = name[1:-1]
        for left, right in (("“", "”"), ("‘", "’"), ("《", "》")):
            inner = name[1:-1]
            if name.startswith(left) and name.endswith(right) and left not in inner and (
                right not in inner
            ):
                name = inner
    if remove_inner_quotes:
        name = name.replace("“", "").replace("”", "").replace("‘", "").replace("’", "")
        name = re.sub(rf"['\"]+(?=[{_CJK}])", "", name)
        name = re.sub(rf"(?<=[{_CJK}])['\"]+", "", name)
        name = name.replace("\u00a0", " ")
        name = re.sub(r"(?<=[^\d])\u202F", " ", name)
    name = name.strip()
    if len(name) < 3 and re.match(r"^[0-9]+$", name):
        return ""
    if len(name) < 6 and all(c.isdigit() or c == "." for c in name) and "." in name:
        return ""
    return name


def _clean(text: str, remove_inner_quotes: bool = False) -> str:
    """LightRAG's ``sanitize_and_normalize_extracted_text``."""
    safe = sanitize_text_for_encoding(text)
    return normalize_extracted_info(safe, remove_inner_quotes) if safe else ""


def fix_tuple_delimiter_corruption(record: str, core: str, delimiter: str) -> str:
    """LightRAG's repairs of a corrupted tuple delimiter (``core`` is ``#`` of ``<|#|>``)."""
    if not record or not core or not delimiter:
        return record
    c = re.escape(core)
    for pattern in (
        rf"<\|{c}\|*?{c}\|>",
        rf"<\|\\{c}\|>",
        r"(?<=\S)<\|+>(?=\S)",
        rf"<.?\|{c}\|.?>",
        rf"<\|?{c}\|?>",
        rf"<[^|]{c}\|>|<\|{c}[^|]>",
        rf"<\|{c}\|+(?!>)",
        rf"<\|{c}:(?!>)",
        rf"<\|+{c}>",
        r"(?<=\S)<\|\|(?!>)",
        rf"(?<!<)\|{c}\|>",
        rf"<\|{c}\|>\|",
        rf"\|\|{c}\|\|",
    ):
        record = re.sub(pattern, delimiter, record)
    return record


def _truncate_name(name: str) -> str:
    if len(name) <= ENTITY_NAME_MAX_LENGTH and len(name.encode("utf-8")) <= ENTITY_NAME_MAX_BYTES:
        return name
    shown = name[:ENTITY_NAME_MAX_LENGTH]
    encoded = shown.encode("utf-8")
    if len(encoded) > ENTITY_NAME_MAX_BYTES:
        shown = encoded[:ENTITY_NAME_MAX_BYTES].decode("utf-8", errors="ignore")
    return shown


def _entity_type(raw: str) -> str | None:
    t = _clean(raw, remove_inner_quotes=True)
    if not t.strip() or any(ch in t for ch in ("'", "(", ")", "<", ">", "|", "/", "\\")):
        return None
    if "," in t:
        tokens = [x.strip() for x in t.split(",") if x.strip()]
        if not tokens:
            return None
        t = tokens[0]
    t = t.replace(" ", "").lower()
    return None if t in _RESERVED_ENTITY_TYPES else t


# --------------------------------------------------------------------------------------
# The parse (operate.py: _process_extraction_result and its record handlers)
# --------------------------------------------------------------------------------------


def _entity(
    fields: list[str], chunk_key: str, timestamp: int, file_path: str
) -> ExtractedEntity | None:
    if len(fields) != 4 or "entity" not in fields[0]:
        return None
    name = _clean(fields[1], remove_inner_quotes=True)
    if not name or not name.strip():
        return None
    entity_type = _entity_type(fields[2])
    if entity_type is None:
        return None
    description = _clean(fields[3])
    if not description.strip():
        return None
    return ExtractedEntity(_truncate_name(name), entity_type, description, chunk_key,
                           file_path, timestamp)


def _relation(
    fields: list[str], chunk_key: str, timestamp: int, file_path: str
) -> ExtractedRelation | None:
    if len(fields) != 5 or "relation" not in fields[0]:
        return None
    source = _clean(fields[1], remove_inner_quotes=True)
    target = _clean(fields[2], remove_inner_quotes=True)
    if not source or not target or source == target:
        return None
    keywords = _clean(fields[3], remove_inner_quotes=True).replace("，", ",")
    description = _clean(fields[4])
    if not description.strip():
        return None
    return ExtractedRelation(_truncate_name(source), _truncate_name(target), 1.0, description,
                             keywords, chunk_key, file_path, timestamp)


def parse_extraction(
    result: str,
    chunk_key: str,
    timestamp: int,
    file_path: str = "unknown_source",
    *,
    tuple_delimiter: str = TUPLE_DELIMITER,
    completion_delimiter: str = COMPLETION_DELIMITER,
) -> tuple[dict[str, list[ExtractedEntity]], dict[tuple[str, str], list[ExtractedRelation]]]:
    """Entities by name and relations by ``(source, target)``, in record order."""
    d = tuple_delimiter
    records = split_by_markers(result, ["\n", completion_delimiter, completion_delimiter.lower()])
    fixed: list[str] = []
    for record in records:
        for entity_record in split_by_markers(record.strip(), [f"{d}entity{d}"]):
            if not entity_record.startswith("entity") and not entity_record.startswith(
                "relation"
            ):
                entity_record = f"entity<|{entity_record}"
            for part in split_by_markers(entity_record, [f"{d}relationship{d}", f"{d}relation{d}"]):
                if not part.startswith("entity") and not part.startswith("relation"):
                    part = f"relation{d}{part}"
                fixed.append(part)
    core = d[2:-2]
    nodes: dict[str, list[ExtractedEntity]] = {}
    edges: dict[tuple[str, str], list[ExtractedRelation]] = {}
    for record in fixed:
        record = fix_tuple_delimiter_corruption(record.strip(), core, d)
        if core != core.lower():
            record = fix_tuple_delimiter_corruption(record, core.lower(), d)
        fields = split_by_markers(record, [d])
        if len(fields) == 5:
            prefix = fields[0].strip().lower()
            if "entity" in prefix and "relation" not in prefix:
                fields = ["relation", *fields[1:]]  # a relation written with the entity prefix
        entity = _entity(fields, chunk_key, timestamp, file_path)
        if entity is not None:
            nodes.setdefault(entity.entity_name, []).append(entity)
            continue
        relation = _relation(fields, chunk_key, timestamp, file_path)
        if relation is not None:
            edges.setdefault((relation.src_id, relation.tgt_id), []).append(relation)
    return nodes, edges
