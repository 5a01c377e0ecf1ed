"""The offline stand-in for a chat model: it recognises each LightRAG prompt hexrag sends and
answers it deterministically from the prompt's own text, in the format LightRAG parses.

* **keyword extraction** (``KEYWORDS_EXTRACTION``: ``---Real Data---`` / ``User Query:``):
  LightRAG's JSON object ``{"high_level_keywords": [...], "low_level_keywords": [...]}``,
  drawn from the query by :func:`hexrag.core.query.keywords.basic_keywords` (themes as lower-case
  phrases, names and identifiers as written);
* **entity extraction and gleaning** (a system prompt and an ``---Input Text---`` block):
  LightRAG's tuple rows, exactly :func:`hexrag.devtools.scripted_kg.kg_reply` (capitalised
  words of the chunk become entities, neighbours relations), so ingestion tests keep their
  expected records;
* **description summaries** (``SUMMARIZE_DESCRIPTIONS``: ``Description List:``): the entity's
  or relation's name followed by its distinct descriptions, in order, cut at the prompt's
  token limit (counted in words);
* **answers** (``RAG_RESPONSE`` / ``NAIVE_RAG_RESPONSE`` as the system prompt, the query as the
  user message): the context sentences that share the most words with the query (at most
  three, in the order of the context), each cited ``[n]`` with its chunk's ``reference_id``,
  then LightRAG's ``### References`` section listing the cited documents (hexrag's encoded
  ``file_path`` shown as ``source (product / category)``); when no sentence shares a word, the
  answer says the context does not cover the question, as the prompt asks.

Anything else gets :func:`~hexrag.devtools.scripted_kg.kg_reply`'s answer. Not a model: the
same prompt always gives the same text, and no text outside the prompt is ever used.
:func:`standin_responder` plugs into
:meth:`hexrag.devtools.scripted_openai.ScriptedOpenAIServer.set_chat_responder`
(``python -m hexrag.devtools.scripted_openai`` uses it); :class:`StandInLLM` is the same as a
:class:`hexrag.ports.LLM`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hexrag.core.encoded_fields import encoded_fields
from hexrag.core.query.keywords import basic_keywords
from hexrag.devtools.scripted_kg import ReplyLLM, kg_reply, split_chat

__all__ = ["StandInLLM", "standin_reply", "standin_responder"]

#: At most this many context sentences make an answer.
MAX_ANSWER_SENTENCES = 3
#: At most this many references are listed (LightRAG's prompt asks for 5 at most).
MAX_REFERENCES = 5

_QUERY = re.compile(r"---Real Data---\s*\nUser Query:(.*?)\n\n---Output---", re.S)
_SUMMARY_NAME = re.compile(r"---Input---\n(.*?) Name: (.*?)\n\nDescription List:", re.S)
_SUMMARY_LIST = re.compile(r"Description List:\n\n```\n(.*?)\n```", re.S)
_SUMMARY_LIMIT = re.compile(r"must not exceed (\d+) tokens")
_FENCED = re.compile(r"```(?:json)?\n(.*?)\n```", re.S)
_REFERENCE = re.compile(r"^\[(\w+)\] (.*)$")
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]+\b")
_STOP = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or the to what when "
    "where which who why with you your my we our they their this that these those there has "
    "have had was were will would should could me us about into than then so if not no".split()
)
_ENCODED_KEYS = ("product_id", "category", "source")


def _words(text: str) -> set[str]:
    """Lower-cased content words, a plural ``s`` dropped (``users`` meets ``user``)."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 2:
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return out


def _keywords(query: str) -> str:
    hl, ll = basic_keywords(query)
    return json.dumps({"high_level_keywords": hl, "low_level_keywords": ll}, ensure_ascii=False)


def _summary(prompt: str) -> str:
    named = _SUMMARY_NAME.search(prompt)
    listed = _SUMMARY_LIST.search(prompt)
    name = named.group(2).strip() if named else ""
    descriptions: list[str] = []
    for line in (listed.group(1).splitlines() if listed else []):
        try:
            item = json.loads(line)
        except ValueError:
            item = line
        text = " ".join(str(v) for v in item.values()) if isinstance(item, dict) else str(item)
        text = text.strip()
        if text and text not in descriptions:
            descriptions.append(text)
    limit = _SUMMARY_LIMIT.search(prompt)
    budget = int(limit.group(1)) if limit else 600
    sentences = [d if d.endswith((".", "!", "?")) else d + "." for d in descriptions]
    words = f"{name}: {' '.join(sentences)}".split() if name else " ".join(sentences).split()
    return " ".join(words[:budget])


def _readable_source(file_path: str) -> str:
    """hexrag's ``product_id:<p>:category:<c>:source:<s>`` as ``<s> (<p> / <c>)``."""
    if not file_path.startswith(_ENCODED_KEYS):
        return file_path
    found = encoded_fields(file_path.split(":"), _ENCODED_KEYS)
    scope = " / ".join(v for v in (found.get("product_id"), found.get("category")) if v)
    source = found.get("source") or "unknown source"
    return f"{source} ({scope})" if scope else source


def _context(system: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """``([(reference_id, chunk content)], {reference_id: file_path})`` from a RAG prompt."""
    context = system.split("---Context---", 1)[1]
    chunks: list[tuple[str, str]] = []
    for block in _FENCED.findall(context):
        for line in block.splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and "content" in item:
                chunks.append((str(item.get("reference_id") or ""), str(item["content"])))
    references: dict[str, str] = {}
    marker = context.rfind("Reference Document List")  # the chunk header names it too
    if marker >= 0:
        block = _FENCED.search(context, marker)
        for line in (block.group(1).splitlines() if block else []):
            found = _REFERENCE.match(line.strip())
            if found:
                references[found.group(1)] = found.group(2)
    return chunks, references


def _sentences(chunks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``[(sentence, reference_id)]`` of the chunks, in context order, without repeats."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for ref, content in chunks:
        for line in content.splitlines():
            if line.lstrip().startswith("#"):  # a heading is not a statement
                continue
            for match in _SENTENCE.finditer(line):
                sentence = " ".join(match.group(0).split()).lstrip("*-> ").strip()
                if len(sentence) >= 12 and sentence.lower() not in seen:
                    seen.add(sentence.lower())
                    out.append((sentence, ref))
    return out


def _answer(query: str, system: str) -> str:
    chunks, references = _context(system)
    sentences = _sentences(chunks)
    wanted = _words(query)
    ranked = sorted((-len(wanted & _words(s)), i) for i, (s, _) in enumerate(sentences))
    chosen = [i for score, i in ranked if score < 0][:MAX_ANSWER_SENTENCES]
    if chosen:
        # then what the chosen sentences' names are said to do (a model would add it too)
        names = {w for i in chosen for w in _NAME.findall(sentences[i][0])}
        for i, (sentence, _) in enumerate(sentences):
            if len(chosen) >= MAX_ANSWER_SENTENCES:
                break
            if i not in chosen and names & set(_NAME.findall(sentence)):
                chosen.append(i)
    best = [sentences[i] for i in sorted(chosen)]
    if not best:
        return ("The provided context does not contain enough information to answer "
                f"\"{query.strip()}\".")
    lines = ["From the knowledge base:", ""]
    cited: list[str] = []
    for sentence, ref in best:
        if not sentence.endswith((".", "!", "?")):
            sentence += "."
        lines.append(f"- {sentence} [{ref}]" if ref else f"- {sentence}")
        if ref and ref not in cited:
            cited.append(ref)
    listed = [r for r in cited if r in references][:MAX_REFERENCES]
    if listed:
        lines += ["", "### References", ""]
        lines += [f"- [{r}] {_readable_source(references[r])}" for r in listed]
    return "\n".join(lines)


def standin_reply(prompt: str, system: str | None = None,
                  history: Sequence[Mapping[str, Any]] = ()) -> str:
    """The stand-in's answer to one chat call (see the module docstring)."""
    query = _QUERY.search(prompt)
    if query and not system and "high_level_keywords" in prompt:
        return _keywords(query.group(1).strip())
    if not system and "Description List:" in prompt:
        return _summary(prompt)
    if system and "---Context---" in system:
        return _answer(prompt, system)
    return kg_reply(prompt, system, history)


def standin_responder(messages: Sequence[Mapping[str, Any]]) -> str:
    """:func:`standin_reply` for OpenAI chat ``messages`` (system, history..., user)."""
    return standin_reply(*split_chat(messages))


class StandInLLM(ReplyLLM):
    """:func:`standin_reply` as a :class:`hexrag.ports.LLM` (counting its calls)."""

    default_name = "standin"
    reply = staticmethod(standin_reply)

    async def stream(self, prompt: str, **kwargs: Any) -> Any:
        """The reply in word-sized pieces, as a streaming server sends it."""
        text = await self.complete(prompt, **kwargs)
        for piece in re.findall(r"\S+\s*|\s+", text):
            yield piece
