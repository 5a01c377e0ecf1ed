"""The Qdrant adapter's error mapping: every qdrant-client exception class (and the errors its
embedded mode raises) comes out of ``translate_errors`` as a :class:`HexragError` of the right
kind, with the driver exception as its cause (the same walk as ``test_error_maps.py``)."""

from __future__ import annotations

import inspect

import pytest

from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    NotFound,
)

pytest.importorskip("qdrant_client", reason="the qdrant extra: pip install 'hexrag[qdrant]'")


def _raise_through(exc: BaseException) -> HexragError:
    from hexrag.adapters.qdrant._errors import translate_errors

    with pytest.raises(HexragError) as info, translate_errors("testing", collection="c"):
        raise exc
    assert info.value.__cause__ is exc
    return info.value


def test_every_driver_exception_class_is_translated() -> None:
    import qdrant_client.common.client_exceptions as client_exceptions
    import qdrant_client.http.exceptions as http_exceptions

    classes = [
        obj for module in (http_exceptions, client_exceptions)
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Exception) and obj.__module__ == module.__name__
    ]
    assert len(classes) >= 4
    for cls in classes:
        try:
            exc = cls("boom")
        except TypeError:
            exc = cls.__new__(cls)
        _raise_through(exc)


def _http(status: int) -> BaseException:
    from qdrant_client.http.exceptions import UnexpectedResponse

    return UnexpectedResponse(status_code=status, reason_phrase="r", content=b"{}", headers=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (ValueError("Collection c not found"), NotFound),
        (ValueError("Wrong input: Vector dimension error: expected dim: 4, got 3"),
         ConfigurationError),
        (RuntimeError("Storage folder /x is already accessed by another instance of Qdrant "
                      "client. If you require concurrent access, use Qdrant server instead."),
         ConfigurationError),
        (TimeoutError("t"), BackendTimeout),
        (ConnectionRefusedError("r"), BackendUnavailable),
        (OSError("disk"), BackendUnavailable),
        (RuntimeError("other"), BackendError),
        (_http(404), NotFound),
        (_http(400), ConfigurationError),
        (_http(503), BackendUnavailable),
        (_http(500), BackendError),
    ],
)
def test_kinds(exc: BaseException, kind: type[HexragError]) -> None:
    assert type(_raise_through(exc)) is kind


async def test_a_second_client_on_an_embedded_directory_is_a_configuration_error(
    tmp_path: object,
) -> None:
    """Embedded Qdrant allows one client per directory: the second is told why."""
    from hexrag.adapters.qdrant import connect

    first = connect(str(tmp_path))
    try:
        with pytest.raises(ConfigurationError, match="another client"):
            connect(str(tmp_path))
    finally:
        await first.close()
