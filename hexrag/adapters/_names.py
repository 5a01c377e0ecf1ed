"""The one check of a name an adapter pastes into a key prefix, node label or collection name.

Such names are never quoted or escaped where they land, so each adapter allows a narrow
pattern and refuses anything else with a :class:`~hexrag.domain.errors.ConfigurationError`
saying what is allowed. Imports nothing of another adapter's package.
"""

from __future__ import annotations

import re

from hexrag.domain.errors import ConfigurationError

__all__ = ["checked_name"]


def checked_name(value: object, pattern: re.Pattern[str], message: str) -> str:
    """``value`` when it is a string that ``pattern`` matches (from its start), else
    ``ConfigurationError(message)``."""
    if not isinstance(value, str) or not pattern.match(value):
        raise ConfigurationError(message)
    return value
