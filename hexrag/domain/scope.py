"""Which part of the corpus a query may see: :class:`QueryScope`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from hexrag.domain.errors import InvalidScope

SCOPE_FIELDS: tuple[str, ...] = ("product_id", "category_id", "doc_ids")


class QueryScope(BaseModel):
    """Which part of the corpus a query may see.

    Each field takes one value or a list of values. Fields combine with AND, values within a
    field with OR: ``QueryScope(product_id=["p1", "p2"], category_id="crm")`` admits a source
    whose product is p1 or p2 *and* whose category is crm. ``doc_ids`` matches a chunk's
    ``full_doc_id``. An unknown field or a malformed value (empty string, non-string, empty
    list) raises :class:`~hexrag.domain.errors.InvalidScope`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    product_id: tuple[str, ...] | None = None
    category_id: tuple[str, ...] | None = None
    doc_ids: tuple[str, ...] | None = None

    def __init__(self, **data: Any) -> None:
        unknown = sorted(set(data) - set(SCOPE_FIELDS))
        if unknown:
            raise InvalidScope(
                f"unknown scope field(s) {unknown}; valid fields are {list(SCOPE_FIELDS)}"
            )
        try:
            super().__init__(**data)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            raise InvalidScope(f"malformed scope: {exc}") from exc

    @field_validator("product_id", "category_id", "doc_ids", mode="before")
    @classmethod
    def _normalise(cls, value: Any, info: Any) -> tuple[str, ...] | None:
        if value is None:
            return None
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, (list, tuple, set, frozenset)):
            raise ValueError(f"{info.field_name} must be a string or a list of strings")
        out: dict[str, None] = {}  # insertion-ordered set: de-duplication in linear time
        for v in values:
            if not isinstance(v, str) or not v.strip():
                shown = repr(v)[:40]
                raise ValueError(f"{info.field_name} values must be non-empty strings, got {shown}")
            if "\x00" in v:
                raise ValueError(f"{info.field_name} values must not contain NUL characters")
            out[v] = None
        if not out:
            raise ValueError(f"{info.field_name} must not be an empty list")
        return tuple(out)

    @property
    def is_empty(self) -> bool:
        """True when no field is set (the scope admits everything)."""
        return self.product_id is None and self.category_id is None and self.doc_ids is None

    def fields(self) -> dict[str, tuple[str, ...]]:
        """The set fields and their admitted values."""
        return {f: v for f in SCOPE_FIELDS if (v := getattr(self, f)) is not None}
