"""The code type-checks: mypy, as configured in pyproject.toml ([tool.mypy]), finds nothing.

Strict for the kernel, the store, the export and the API; the defaults plus every function body elsewhere.
Run it by hand with `mypy` from the repository root (the first run takes half a minute; later ones reuse
.mypy_cache and take seconds)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_mypy_finds_no_type_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("Success: no issues found")
