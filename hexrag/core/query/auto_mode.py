"""``mode="auto"`` (seed 002): choose the retrieval mode from the query.

With an LLM, one JSON-mode call asks the model to choose (its answer is parsed tolerantly and
checked against the allowed modes). Without one, or when the model's answer is unusable, a
documented heuristic decides:

* a greeting-free question that names specific things (proper nouns, codes, quoted terms) and
  asks nothing thematic -> ``local``;
* an overview question (summarise, overview, trends, themes, compare, across, overall, main,
  "what are the") with no specific names -> ``global``;
* both specific names and a thematic ask -> ``hybrid``;
* anything else -> ``mix`` (LightRAG's default: graph plus direct chunk search).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hexrag.core.query.keywords import basic_keywords, remove_think_tags, strip_markdown_code_fence
from hexrag.ports import LLM

__all__ = ["AUTO_MODES", "ModeChoice", "choose_mode", "heuristic_mode"]

AUTO_MODES = ("local", "global", "hybrid", "mix", "naive")

_THEMATIC = re.compile(
    r"\b(summar\w*|overview|overall|trends?|themes?|compare|comparison|across|main|"
    r"landscape|in general|what are the|key (?:points|ideas|differences))\b",
    re.IGNORECASE,
)

_PROMPT = """---Role---
You route questions for a knowledge-graph RAG system.

---Goal---
Choose the retrieval mode for the user query:
- "local": the query asks about specific named entities and their direct facts.
- "global": the query asks about broad themes, summaries or relationships across the corpus.
- "hybrid": the query needs both specific entities and broad themes.
- "mix": the query needs graph knowledge and direct passages (default when unsure).
- "naive": the query is a plain passage lookup that needs no graph.

---Output---
Answer with a JSON object only:
{{"mode": "<one of local, global, hybrid, mix, naive>", "reason": "<short reason>"}}

User Query: {query}
Output:"""


@dataclass(frozen=True, slots=True)
class ModeChoice:
    """The chosen mode and how it was chosen (reported in ``metadata.mode_selection``)."""

    mode: str
    method: str  # "llm" | "heuristic"
    reason: str

    def as_metadata(self) -> dict[str, Any]:
        """The ``metadata.mode_selection`` object."""
        return {
            "requested": "auto",
            "chosen": self.mode,
            "method": self.method,
            "reason": self.reason,
        }


def heuristic_mode(query: str) -> ModeChoice:
    """The documented heuristic (module docstring)."""
    thematic = bool(_THEMATIC.search(query))
    _, ll = basic_keywords(query)
    stripped = query.strip()
    specific = [
        k
        for k in ll
        if k != stripped and (any(c.isupper() for c in k) or any(c.isdigit() for c in k))
    ]
    if specific and thematic:
        return ModeChoice("hybrid", "heuristic", "names specific things and asks a broad question")
    if specific:
        return ModeChoice("local", "heuristic", f"names specific things: {', '.join(specific[:3])}")
    if thematic:
        return ModeChoice("global", "heuristic", "asks for themes or an overview")
    return ModeChoice("mix", "heuristic", "no clear signal; graph plus direct chunk search")


async def choose_mode(
    query: str, llm: LLM | None, repair_json: Callable[[str], Any] | None = None
) -> ModeChoice:
    """Ask the LLM when there is one; fall back to :func:`heuristic_mode`.

    The answer is read with ``repair_json`` (``json_repair.loads``, injected by the composition
    root; ``json.loads`` when none is given)."""
    if llm is None:
        return heuristic_mode(query)
    try:
        raw = await llm.complete(_PROMPT.format(query=query), json_mode=True)
        text = strip_markdown_code_fence(remove_think_tags(raw))
        payload: Any = (repair_json or json.loads)(text)
        mode = str(payload.get("mode", "")).strip().lower() if isinstance(payload, dict) else ""
        if mode in AUTO_MODES:
            reason = str(payload.get("reason", "")).strip() or "chosen by the model"
            return ModeChoice(mode, "llm", reason)
        fallback = heuristic_mode(query)
        return ModeChoice(
            fallback.mode, "heuristic", f"model answer unusable ({raw[:60]!r}); {fallback.reason}"
        )
    except Exception as exc:  # the model is optional here: never fail a query over routing
        fallback = heuristic_mode(query)
        return ModeChoice(
            fallback.mode, "heuristic", f"model failed ({type(exc).__name__}); {fallback.reason}"
        )
