"""Fixtures of the LightRAG parity suite (``test_parity_lightrag.py``).

The datasets are generated once per session, written into genuine LightRAG working
directories through LightRAG's own storage classes, and opened twice per chunk pick method:
by LightRAG 1.5.7 (``aquery_data`` / ``aquery``) and by hexrag (``load_workdir`` +
``QueryEngine``). Everything runs on one private event loop (LightRAG binds its storages'
locks to the loop that initialised them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from hexrag.devtools.lightrag_data import require_lightrag

T = TypeVar("T")


@dataclass
class ParityWorld:
    """Datasets on disk, with a LightRAG and a hexrag handle per (dataset, pick method)."""

    runner: asyncio.Runner
    embedders: dict[str, Any]
    root: Path
    dirs: dict[str, Any] = field(default_factory=dict)
    datasets: dict[str, Any] = field(default_factory=dict)
    _lightrag: dict[tuple[str, str], Any] = field(default_factory=dict)
    _hexrag: dict[tuple[str, str], Any] = field(default_factory=dict)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the suite's event loop."""
        return self.runner.run(coro)

    def lightrag(self, key: str, pick: str) -> Any:
        """The LightRAG object of dataset ``key`` configured with chunk pick method ``pick``."""
        from hexrag.devtools.lightrag_data import open_lightrag

        handle = self._lightrag.get((key, pick))
        if handle is None:
            handle = self.run(
                open_lightrag(self.dirs[key], self.embedders[key], kg_chunk_pick_method=pick)
            )
            self._lightrag[(key, pick)] = handle
        return handle

    def hexrag(self, key: str, pick: str) -> Any:
        """hexrag's engine on dataset ``key``, LightRAG-parity settings, pick method ``pick``."""
        from hexrag.devtools.lightrag_data import open_hexrag

        handle = self._hexrag.get((key, pick))
        if handle is None:
            handle = self.run(
                open_hexrag(self.dirs[key].path, self.embedders[key], kg_chunk_pick_method=pick)
            )
            self._hexrag[(key, pick)] = handle
        return handle

    def close(self) -> None:
        """Finalise the LightRAG storages."""
        for handle in self._lightrag.values():
            self.run(handle.finalize_storages())
        self._lightrag.clear()


@pytest.fixture(scope="session")
def parity_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ParityWorld]:
    """Generate and write the parity datasets (``lightrag_data.PARITY_DATASETS``)."""
    require_lightrag()
    from hexrag.devtools.lightrag_data import (
        PARITY_DATASETS,
        PARITY_EMBEDDERS,
        generate_dataset,
        parity_embedder,
        write_lightrag_workdir,
    )

    runner = asyncio.Runner()
    world = ParityWorld(
        runner=runner,
        embedders={key: parity_embedder(kind=PARITY_EMBEDDERS[key]) for key in PARITY_DATASETS},
        root=tmp_path_factory.mktemp("lightrag"),
    )
    try:
        for key, spec in PARITY_DATASETS.items():
            ds = generate_dataset(spec)
            world.datasets[key] = ds
            world.dirs[key] = world.run(
                write_lightrag_workdir(ds, world.root, world.embedders[key], workspace=key)
            )
        yield world
    finally:
        try:
            world.close()
        finally:
            runner.close()
