"""The positional record constructors build the very objects the dataclasses build."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.domain.records import (
    Chunk,
    Entity,
    Relation,
    VectorRecord,
    new_chunk,
    new_entity,
    new_relation,
    new_vector_record,
)

_PAIRS = [
    (Entity, new_entity),
    (Relation, new_relation),
    (Chunk, new_chunk),
    (VectorRecord, new_vector_record),
]
_value = (
    st.none()
    | st.text(max_size=8)
    | st.integers()
    | st.floats(allow_nan=False)
    | st.dictionaries(st.text(max_size=4), st.integers(), max_size=3)
)


@pytest.mark.parametrize(("cls", "make"), _PAIRS, ids=lambda p: getattr(p, "__name__", ""))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_same_object_as_the_dataclass(cls: Any, make: Any, data: st.DataObject) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    values = [data.draw(_value, label=name) for name in names]
    made, built = make(*values), cls(*values)
    assert type(made) is cls
    assert made == built
    assert repr(made) == repr(built)
    for name, value in zip(names, values, strict=True):
        assert getattr(made, name) is value
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, names[0], "changed")


@pytest.mark.parametrize(("cls", "make"), _PAIRS, ids=lambda p: getattr(p, "__name__", ""))
def test_every_field_is_required(cls: Any, make: Any) -> None:
    n = len(dataclasses.fields(cls))
    with pytest.raises(TypeError):
        make(*([None] * (n - 1)))
    with pytest.raises(TypeError):
        make(*([None] * (n + 1)))
