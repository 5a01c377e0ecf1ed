"""``StackContract`` over stacks *described* to it: the contract opens them through
:func:`hexrag.bootstrap.open` (the one place stores are opened) and closes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hexrag.config import StackConfig
from hexrag.testing import StackContract


class TestMemorySpecStack(StackContract):
    @pytest.fixture
    def stack(self) -> Any:
        return "memory"


class TestTomlStack(StackContract):
    @pytest.fixture
    def stack(self, tmp_path: Path) -> Any:
        path = tmp_path / "stack.toml"
        path.write_text(f'embedder = "hashing:{self.stack_dim}"\n'
                        "[settings]\ncosine_threshold = 0.2\n", encoding="utf-8")
        return path


class TestStackConfigStack(StackContract):
    @pytest.fixture
    def stack(self) -> Any:
        return StackConfig(vector_index="memory", graph_store="memory", chunk_store="memory",
                           embedder=f"hashing:{self.stack_dim}", settings={"cosine_threshold": 0.2})
