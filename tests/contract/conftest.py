"""Contract-suite plumbing: detailed assertion messages inside hexrag.testing."""

import pytest

pytest.register_assert_rewrite("hexrag.testing")
