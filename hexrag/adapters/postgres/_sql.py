"""SQL identifiers: validated against a strict pattern, then quoted.

Only identifiers (schema, table prefix) are ever formatted into SQL text; every value travels
as a ``$n`` parameter.
"""

from __future__ import annotations

import re

from hexrag.adapters._names import checked_name
from hexrag.domain.errors import ConfigurationError

__all__ = ["TableNames", "quote_ident", "validate_identifier"]

# Lower-case so that quoted and unquoted spellings name the same relation; short enough that
# ``<prefix>_vdb_relationships_chunk_ids`` stays within PostgreSQL's 63-byte limit.
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,29}$")
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def validate_identifier(value: object, *, what: str) -> str:
    """Return ``value`` if it is a safe identifier, else raise ConfigurationError."""
    return checked_name(
        value, _IDENT,
        f"postgres {what} {value!r} is invalid: use 1-30 characters from [a-z0-9_], "
        "starting with a letter or '_'",
    )


def quote_ident(name: str) -> str:
    """``name`` as a quoted identifier (``name`` must already be validated)."""
    if not _NAME.match(name):
        raise ConfigurationError(f"postgres identifier {name!r} is invalid")
    return f'"{name}"'


class TableNames:
    """Qualified, quoted names of one adapter's relations: ``[schema.]<prefix>_<suffix>``."""

    def __init__(self, *, schema: str | None, table_prefix: str) -> None:
        self.schema = None if schema is None else validate_identifier(schema, what="schema")
        self.prefix = validate_identifier(table_prefix, what="table_prefix")

    def bare(self, suffix: str) -> str:
        """The unquoted relation name ``<prefix>_<suffix>``."""
        return f"{self.prefix}_{suffix}"

    def qualified(self, suffix: str) -> str:
        """The quoted, schema-qualified relation name."""
        name = quote_ident(self.bare(suffix))
        return name if self.schema is None else f"{quote_ident(self.schema)}.{name}"

    def index(self, suffix: str) -> str:
        """A quoted index name (indexes live in their table's schema, so unqualified)."""
        return quote_ident(self.bare(suffix))

    def regclass_text(self, suffix: str) -> str:
        """The text form ``to_regclass`` expects (passed as a parameter, never formatted)."""
        return self.qualified(suffix)

    def create_schema(self) -> str:
        """``CREATE SCHEMA IF NOT EXISTS`` for the configured schema, or ``""``."""
        if self.schema is None:
            return ""
        return f"CREATE SCHEMA IF NOT EXISTS {quote_ident(self.schema)};\n"
