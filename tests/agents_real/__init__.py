"""The real-client harness (see harness.py)."""

import pytest

pytest.register_assert_rewrite("tests.agents_real.contract", "tests.agents_real.harness")
