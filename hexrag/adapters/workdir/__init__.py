"""LightRAG working directories (Json KV + NanoVectorDB + NetworkX GraphML files).

:func:`load_workdir` opens a directory LightRAG 1.5.7 wrote into the memory adapters;
:func:`save_workdir` writes such a stack back in the same format, atomically, so LightRAG can
open it. Only the standard library, numpy and the memory adapters are used.
"""

from __future__ import annotations

from hexrag.adapters.workdir.stack import (
    WorkdirStack,
    empty_workdir_stack,
    load_graph,
    load_workdir,
    resolve_workdir,
    save_graph,
    save_workdir,
)

__all__ = [
    "WorkdirStack",
    "empty_workdir_stack",
    "load_graph",
    "load_workdir",
    "resolve_workdir",
    "save_graph",
    "save_workdir",
]
