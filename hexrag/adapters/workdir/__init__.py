"""LightRAG working directories (Json KV + NanoVectorDB + NetworkX GraphML files).

:func:`load_workdir` opens a directory LightRAG 1.5.7 wrote into the memory adapters;
:func:`save_workdir` writes such a stack back in the same format, atomically, so LightRAG can
open it. Only the standard library, numpy and the memory adapters are used.
"""

from __future__ import annotations

from hexrag.adapters.workdir.stack import *  # noqa: F403  (the package's API is the stack's)
from hexrag.adapters.workdir.stack import __all__ as __all__
