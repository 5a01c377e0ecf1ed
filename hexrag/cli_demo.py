"""``hexrag demo``: what each mode retrieves from the embedded demo knowledge base.
"""

from __future__ import annotations

from typing import Annotated

import typer

from hexrag.cli_common import _guarded, parse_scope
from hexrag.core.errors import InvalidQuery

__all__ = ["demo_command"]


def demo_command(
    question: Annotated[
        str | None, typer.Argument(help="The question (default: a single sign-on question).")
    ] = None,
    mode: Annotated[
        list[str] | None,
        typer.Option("--mode", "-m", help="Mode(s) to show (repeatable; default: all five)."),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help="Scope for the scoped runs, FIELD=VALUE (repeatable; default product_id=p-erp).",
        ),
    ] = None,
    ingest: Annotated[
        bool,
        typer.Option("--ingest", help="Build the knowledge base by ingesting the demo's "
                     "documents (LightRAG's pipeline, offline scripted LLM) first."),
    ] = False,
) -> None:
    """Show what each mode retrieves from the embedded demo knowledge base, unscoped and scoped."""
    from hexrag.demo import DEFAULT_QUESTION
    from hexrag.demo.run import DEMO_MODES, run_demo

    def go() -> None:
        modes = tuple(mode) if mode else DEMO_MODES
        for m in modes:
            if m not in DEMO_MODES:
                raise InvalidQuery(f"unknown mode {m!r}; choose from {', '.join(DEMO_MODES)}")
        run_demo(question or DEFAULT_QUESTION, modes=modes, scope=parse_scope(scope),
                 ingest=ingest)

    _guarded(go)

