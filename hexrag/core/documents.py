"""Document status rows and extracted fragments: re-exported from :mod:`hexrag.domain.documents`.

The same objects (every name of that module's ``__all__``), handed on so that code written
before keeps importing them from here.
"""

from __future__ import annotations

from hexrag.domain.documents import *  # noqa: F403  (this module is the re-export)
from hexrag.domain.documents import __all__ as __all__
