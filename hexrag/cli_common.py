"""What the commands of :mod:`hexrag.cli` share: the exit statuses and the one-line error
report (:func:`_guarded`), ``--scope`` parsing, the ``--stack`` / ``--workspace`` options and
the progress bars.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from hexrag.core.errors import (
    BackendError,
    ConfigurationError,
    HexragError,
    InvalidQuery,
    InvalidScope,
    NotFound,
)
from hexrag.core.model import SCOPE_FIELDS, QueryScope

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "parse_scope"]


_T = TypeVar("_T")
EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1



def _fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    typer.echo(f"hexrag: error: {message}", err=True)
    raise typer.Exit(code)


def _guarded(func: Callable[[], _T]) -> _T:
    """Run ``func``; turn hexrag errors (and any other error) into one line + exit status."""
    if os.environ.get("HEXRAG_DEBUG"):
        return func()
    try:
        return func()
    except (NotFound, ConfigurationError, InvalidQuery) as exc:
        _fail(str(exc), EXIT_BAD_INPUT)
    except BackendError as exc:
        _fail(str(exc), EXIT_FAILURE)
    except HexragError as exc:
        _fail(str(exc), EXIT_FAILURE)
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug: still no traceback for users (HEXRAG_DEBUG=1 shows it)
        _fail(f"unexpected {type(exc).__name__}: {exc} (set HEXRAG_DEBUG=1 for a traceback)",
              EXIT_FAILURE)


def parse_scope(items: list[str] | None) -> QueryScope | None:
    """``["product_id=p1", "product_id=p2", "category_id=crm"]`` -> a :class:`QueryScope`.

    A repeated field collects its values (OR); different fields combine with AND. Raises
    :class:`~hexrag.core.errors.InvalidScope` for an item without ``=``, an empty field or
    value, or an unknown field.
    """
    if not items:
        return None
    fields: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise InvalidScope(
                f"bad --scope {item!r}: expected FIELD=VALUE with FIELD one of "
                f"{', '.join(SCOPE_FIELDS)}"
            )
        if key not in SCOPE_FIELDS:
            raise InvalidScope(
                f"bad --scope {item!r}: unknown field {key!r}; valid fields are "
                f"{', '.join(SCOPE_FIELDS)}"
            )
        values = fields.setdefault(key, [])
        if value not in values:
            values.append(value)
    return QueryScope(**{k: (v[0] if len(v) == 1 else v) for k, v in fields.items()})



_STACK_HELP = "A stack TOML file (see hexrag.config) or a LightRAG working directory."
_WorkspaceOption = Annotated[
    str | None,
    typer.Option("--workspace", help="Workspace of the stack (LightRAG's: the "
                 "<workdir>/<workspace>/ folder or deployment workspace; hexrag's layout: "
                 "<namespace>_<workspace>).", show_default=False),
]


_StackOption = Annotated[
    Path | None,
    typer.Option("--stack", help=_STACK_HELP + " (or give it as the first argument).",
                 show_default=False),
]

#: The optional ``[STACK]`` argument of the commands that also take ``--stack``.
_StackArgument = Annotated[
    Path | None,
    typer.Argument(metavar="[STACK]", help=_STACK_HELP + " (or --stack).", show_default=False),
]

#: ``--stack`` where it is the only way to name the stack (required).
_RequiredStackOption = Annotated[
    Path, typer.Option("--stack", help=_STACK_HELP, show_default=False)
]

#: ``--page-size`` of the commands that read a stack page by page.
_PageSizeOption = Annotated[int, typer.Option(help="Records per page.", min=1, max=10000)]


def _the_stack(option: Path | None, *positional: Path | None) -> tuple[Path, list[Path]]:
    """The stack (``--stack``, else the first positional argument) and the other
    positional arguments, for commands that also take the stack as their first argument."""
    given = [p for p in positional if p is not None]
    if option is not None:
        return option, given
    if not given:
        _fail("name the stack: --stack STACK (a stack TOML or a LightRAG directory)")
    return given[0], given[1:]


class _Bars:
    """One rich progress bar per store (section), on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _Bars:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, section: str, done: int, total: int | None) -> None:
        task = self.tasks.get(section)
        if task is None:
            task = self.tasks[section] = self.progress.add_task(section, total=total)
        self.progress.update(task, completed=done, total=total)

    def say(self, message: str) -> None:
        self.progress.console.log(message)

