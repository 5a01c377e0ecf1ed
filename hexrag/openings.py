"""What each adapter package opens, and the registry that finds it by URL scheme.

Every adapter package that can hold a stack's sections declares it in one
``hexrag/adapters/<package>/opening.py`` exporting ``OPENING``, an :class:`Opening`: the
URL schemes it accepts, the configuration roles it can fill (``vector_index``,
``graph_store``, ``chunk_store``, ``cache``), the stack sections it can hold in each layout,
the pip extra its driver comes from, and :attr:`Opening.open`, which opens one section from
a parsed URL. :mod:`hexrag.config` parses a URL with :func:`for_scheme` (imports the
declaration of that scheme only) and :mod:`hexrag.builder` opens each section through
:func:`for_kind`; neither has a branch per backend.

A role holds these sections: ``vector_index`` the three ``vectors`` indexes,
``graph_store`` the ``graph``, ``chunk_store`` the ``chunks`` and, on the same backend, the
``documents`` (status rows, fragments), LightRAG's document-side ``kv`` namespaces and the
``manifest``; ``cache`` the ``llm_cache``.

Adding a scheme is writing one declaration and registering it: one line in
:data:`BUILTIN` (scheme -> the declaration's module) for a package of hexrag, or
:func:`register` at run time (a plugin, a test).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from hexrag.domain.errors import ConfigurationError

_D = TypeVar("_D")

__all__ = [
    "BUILTIN",
    "ROLE_SECTIONS",
    "WITHOUT_SCHEME",
    "Opening",
    "OpeningContext",
    "Section",
    "all_openings",
    "for_kind",
    "for_scheme",
    "for_the_block",
    "redact_url",
    "register",
    "registered",
    "require_module",
    "split_credentials",
    "split_database",
    "unregister",
]

#: A section of a stack, as one adapter opens it.
Section = Literal["vectors", "graph", "chunks", "documents", "kv", "manifest", "llm_cache"]

#: The sections each configuration role holds (the chunk store's backend also keeps the
#: documents, LightRAG's document-side namespaces and the manifest).
ROLE_SECTIONS: Mapping[str, tuple[Section, ...]] = {
    "vector_index": ("vectors",),
    "graph_store": ("graph",),
    "chunk_store": ("chunks", "documents", "kv", "manifest"),
    "cache": ("llm_cache",),
}

#: The URL schemes of hexrag's own adapter packages -> the module whose ``OPENING``
#: declares them (imported only when the scheme is used). ``memory`` is the spec
#: ``memory`` (no ``://``).
BUILTIN: dict[str, str] = {
    "memory": "hexrag.adapters.memory.opening",
    "postgres": "hexrag.adapters.postgres.opening",
    "postgresql": "hexrag.adapters.postgres.opening",
    "redis": "hexrag.adapters.redis.opening",
    "rediss": "hexrag.adapters.redis.opening",
    "unix": "hexrag.adapters.redis.opening",
    "milvus": "hexrag.adapters.milvus.opening",
    "http": "hexrag.adapters.milvus.opening",
    "https": "hexrag.adapters.milvus.opening",
    "qdrant": "hexrag.adapters.qdrant.opening",
    "neo4j": "hexrag.adapters.neo4j.opening",
    "neo4j+s": "hexrag.adapters.neo4j.opening",
    "neo4j+ssc": "hexrag.adapters.neo4j.opening",
    "bolt": "hexrag.adapters.neo4j.opening",
    "bolt+s": "hexrag.adapters.neo4j.opening",
    "bolt+ssc": "hexrag.adapters.neo4j.opening",
}


#: Declarations named by a configuration key rather than a URL scheme (``workdir``).
WITHOUT_SCHEME: tuple[str, ...] = ("hexrag.adapters.workdir.opening",)


class OpeningContext(Protocol):
    """What an opener is given besides the URL: the stack's options, and where to leave
    what must be closed or written back (:class:`hexrag.builder.StackBuilder` gives one)."""

    @property
    def layout(self) -> str:
        """``hexrag`` (hexrag's own tables / keys), ``lightrag`` (a LightRAG 1.5.7
        deployment read and written in place) or ``workdir`` (a working directory)."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension of the stack (``0`` before the embedder is known)."""
        ...

    @property
    def namespace(self) -> str:
        """hexrag's table / collection / key prefix or label (``StackConfig.namespace``)."""
        ...

    @property
    def lightrag_workspace(self) -> str:
        """LightRAG's workspace (``""``: none)."""
        ...

    @property
    def workdir(self) -> Path | None:
        """LightRAG's working directory, if the stack names one."""
        ...

    @property
    def manifest_key(self) -> str:
        """The key of the stack's manifest record (one per LightRAG workspace beside a
        deployment)."""
        ...

    @property
    def cosine_threshold(self) -> float:
        """The vector indexes' cosine threshold."""
        ...

    @property
    def store_timeout(self) -> float:
        """Seconds a statement or command may take."""
        ...

    @property
    def read_only(self) -> bool:
        """A read-only opening creates no table of the core sections."""
        ...

    #: Backend-specific options of the configuration (``postgres_schema``,
    #: ``lightrag_model_name``): ``option(name)`` returns ``None`` when unset.
    def option(self, name: str) -> Any:
        """The configuration's value of ``name`` (``None`` when unset)."""
        ...

    def say(self, message: str) -> None:
        """Report one step of the opening."""
        ...

    def close_with(self, name: str, closer: Callable[[], Awaitable[Any]]) -> None:
        """Close ``closer`` with the stack (newest first)."""
        ...

    def commit_with(self, name: str, committer: Callable[[], Awaitable[Any]]) -> None:
        """Run ``committer`` when the stack commits (what lives in files)."""
        ...

    async def shared(self, key: str, factory: Callable[[], Awaitable[Any]]) -> Any:
        """One object per ``key`` for the whole stack (a connection pool per DSN)."""
        ...


#: Opens one section at a URL (``None`` for ``memory``): ``vectors`` returns a mapping
#: ``entities``/``relationships``/``chunks`` -> index, ``kv`` a mapping namespace -> store,
#: ``documents`` a store or ``None``, the others one store.
Opener = Callable[[OpeningContext, Section, "str | None"], Awaitable[Any]]


@dataclass(frozen=True)
class Opening:
    """One adapter package's declaration of what it opens (see the module docstring)."""

    #: The kind a parsed spec names (``StoreSpec.kind``): ``postgres``, ``redis``...
    kind: str
    #: URL schemes (lower case, without ``://``) it accepts.
    schemes: tuple[str, ...]
    #: Configuration roles it can fill.
    roles: tuple[str, ...]
    #: Sections it can hold, per layout (``hexrag`` / ``lightrag``).
    sections: Mapping[str, tuple[Section, ...]]
    #: Opens one section (:data:`Opener`).
    open: Opener
    #: The pip extra that brings its driver (``pip install 'hexrag[<extra>]'``).
    extra: str | None = None
    #: Modules that must be importable to open anything of it.
    requires: tuple[str, ...] = ()
    #: Example specs per role, for error messages.
    examples: Mapping[str, str] = field(default_factory=dict)
    #: ``layout = lightrag``: LightRAG 1.5.7's storage class per role it reads in place.
    lightrag_storages: Mapping[str, str] = field(default_factory=dict)
    #: ``(role, url) -> url`` the opener is given (pure, no I/O); ``None``: unchanged.
    normalize: Callable[[str, str], str] | None = None
    #: Roles for which only some schemes are meant (``{"http": ("vector_index",)}``).
    scheme_roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def accepts(self, role: str, scheme: str) -> bool:
        """Whether ``role`` may name this backend with ``scheme``."""
        return role in self.scheme_roles.get(scheme, self.roles)

    def holds(self, section: Section, layout: str = "hexrag") -> bool:
        """Whether it can hold ``section`` in ``layout``."""
        return section in self.sections.get(layout, ())

    def check_installed(self, what: str) -> None:
        """:class:`ConfigurationError` naming the extra when a required driver is missing."""
        for module in self.requires:
            require_module(module, self.extra, what)

    async def open_section(self, ctx: OpeningContext, section: Section, url: str | None,
                           *, what: str) -> Any:
        """Check the driver, then open ``section`` (a :class:`ConfigurationError` when
        this backend cannot hold it in the context's layout)."""
        if not self.holds(section, ctx.layout):
            raise ConfigurationError(
                f"{what}: {self.kind} cannot hold the {section} section in the {ctx.layout} "
                "layout"
            )
        self.check_installed(what)
        return await self.open(ctx, section, url)


def require_module(module: str, extra: str | None, what: str) -> None:
    """:class:`ConfigurationError` naming ``pip install 'hexrag[extra]'`` when ``module``
    cannot be imported."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        how = f"pip install 'hexrag[{extra}]'" if extra else f"pip install {module}"
        raise ConfigurationError(
            f"{what} needs the {module!r} package, which is not installed: {how} ({exc})"
        ) from None


_REGISTERED: dict[str, Opening] = {}
_BY_SCHEME: dict[str, Opening] = {}


def register(opening: Opening) -> Opening:
    """Make ``opening``'s schemes known (replacing a registered one of the same kind)."""
    unregister(opening.kind)
    _REGISTERED[opening.kind] = opening
    for scheme in opening.schemes:
        _BY_SCHEME[scheme.lower()] = opening
    return opening


def unregister(kind: str) -> None:
    """Forget the registered declaration of ``kind`` (built-in ones load again on use)."""
    old = _REGISTERED.pop(kind, None)
    if old is not None:
        for scheme in old.schemes:
            if _BY_SCHEME.get(scheme.lower()) is old:
                del _BY_SCHEME[scheme.lower()]


@contextmanager
def for_the_block(declared: _D, register: Callable[[_D], object],
                  unregister: Callable[[], object]) -> Iterator[_D]:
    """``register(declared)`` for the block, ``unregister()`` after it (raised or not)."""
    register(declared)
    try:
        yield declared
    finally:
        unregister()


def registered(opening: Opening) -> AbstractContextManager[Opening]:
    """``with registered(OPENING): ...``: registered for the block only."""
    return for_the_block(opening, register, lambda: unregister(opening.kind))


def _load(module: str) -> Opening:
    declared = getattr(importlib.import_module(module), "OPENING", None)
    if not isinstance(declared, Opening):
        raise ConfigurationError(f"{module} declares no OPENING")  # a packaging defect
    if _REGISTERED.get(declared.kind) is not declared:
        register(declared)
    return declared


def for_scheme(scheme: str) -> Opening | None:
    """The declaration accepting ``scheme`` (``memory`` for the spec ``memory``), importing
    only its module; ``None`` when no package declares it."""
    key = scheme.lower()
    found = _BY_SCHEME.get(key)
    if found is None and key in BUILTIN:
        found = _load(BUILTIN[key])
    return found


def for_kind(kind: str) -> Opening:
    """The declaration of ``kind`` (a parsed ``StoreSpec.kind``)."""
    found = _REGISTERED.get(kind)
    if found is None:
        for module in dict.fromkeys((*BUILTIN.values(), *WITHOUT_SCHEME)):
            if module.split(".")[-2] == kind:
                found = _load(module)
                break
    if found is None:
        raise ConfigurationError(f"no adapter package declares the store kind {kind!r}")
    return found


def all_openings() -> list[Opening]:
    """Every declaration, built-in (imported now) and registered: for error messages that
    list the choices, and for tests."""
    for module in dict.fromkeys((*BUILTIN.values(), *WITHOUT_SCHEME)):
        _load(module)
    return list(_REGISTERED.values())


# -- URL helpers of the openers (pure) ----------------------------------------------------


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for logs, errors and ``/health``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def split_credentials(url: str) -> tuple[str | None, str | None, str]:
    """``(user, password, url without them)``; a plain path is returned unchanged."""
    if "://" not in url:
        return None, None, url
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return None, None, url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    bare = urlunsplit(parts._replace(netloc=host))
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return user, password, bare


def split_database(uri: str) -> tuple[str, str | None]:
    """``neo4j://host:7687/name`` -> (``neo4j://host:7687``, ``name``)."""
    parts = urlsplit(uri)
    name = parts.path.strip("/")
    if not name:
        return uri, None
    return urlunsplit(parts._replace(path="")), name
