"""Test-suite plumbing: detailed assertion messages inside the contract suite (hexrag.testing)."""

import pytest

pytest.register_assert_rewrite("hexrag.testing")
