"""The guard every contract base carries (as langchain-tests' ``test_no_overrides``)."""

from __future__ import annotations

from typing import Any

__all__ = ["ContractGuard"]


def _marks(func: Any) -> list[Any]:
    return list(getattr(func, "pytestmark", []))


class ContractGuard:
    """Fails a subclass that overrides or weakens a contract test.

    A backend may replace an inherited contract test only to mark it a **strict** xfail with a
    reason (the layout cannot keep that sentence); any other override - a different body, a
    ``pass``, a skip, a non-strict xfail - is refused by
    :meth:`test_no_overrides_DO_NOT_OVERRIDE`, and so is replacing one of the kit's own helpers
    (``_assert_matches``, ``_seen``, ``_oracle``...: a test is weakened as surely through
    them). Where a layout keeps another system's rules it declares them as its ``traits``
    (``VectorIndexTraits``, ``GraphStoreTraits``, ``ChunkStoreTraits``, ``CacheTraits``) and the
    kit asserts what it declares.
    """

    async def test_no_overrides_DO_NOT_OVERRIDE(self) -> None:
        """No contract test is overridden except as a strict, explained xfail."""
        cls = type(self)
        contract = next(
            (
                base
                for base in cls.__mro__
                if base.__module__.startswith("hexrag.testing") and base is not ContractGuard
            ),
            None,
        )
        assert contract is not None, f"{cls.__name__} derives from no hexrag contract class"
        helpers = [
            name for name in dir(contract)
            if name.startswith("_") and not name.startswith("__")
            and callable(getattr(contract, name)) and getattr(cls, name) is not getattr(
                contract, name)
        ]
        assert not helpers, (
            f"{cls.__name__} replaces contract kit helper(s) {helpers}: declare the layout's "
            "rules as its traits instead"
        )
        wrong = []
        for name in dir(contract):
            if not name.startswith("test") or name == "test_no_overrides_DO_NOT_OVERRIDE":
                continue
            original = getattr(contract, name)
            mine = getattr(cls, name)
            if mine is original:
                continue
            xfails = [m for m in _marks(mine) if getattr(m, "name", None) == "xfail"]
            ok = any(
                m.kwargs.get("strict") is True and str(m.kwargs.get("reason", "")).strip()
                for m in xfails
            )
            if not ok:
                wrong.append(name)
        assert not wrong, (
            f"{cls.__name__} overrides contract test(s) {wrong}: a backend may only mark an "
            "inherited test pytest.mark.xfail(strict=True, reason=...) naming what its layout "
            "cannot keep"
        )
        if cls.__dict__.get("test_no_overrides_DO_NOT_OVERRIDE") is not None:
            raise AssertionError("test_no_overrides_DO_NOT_OVERRIDE must not be overridden")
