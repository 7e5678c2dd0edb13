"""The code type-checks: mypy, as configured in pyproject.toml ([tool.mypy]), finds nothing.

Strict for every layer under the front ends (the kernel, the store, the index, the export, the services, the
team remote, git sync, the API) and the front ends' seams; the defaults plus every function body elsewhere.
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


STRICT = ("cmem_cli.core.*", "cmem_cli.store.*", "cmem_index.*", "cmem_export.*", "cmem_cli.services.*",
          "cmem_cli.team.*", "cmem_cli.sync.*", "cmem_cli.api.*")  # fmt: skip


def test_every_layer_under_the_front_ends_is_checked_strictly() -> None:
    """A package dropped from the strict list would let untyped code back in unnoticed: the list names them."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    [strict] = [o for o in config["tool"]["mypy"]["overrides"] if o.get("disallow_untyped_defs")]
    assert set(STRICT) <= set(strict["module"])
    assert strict["warn_return_any"] and strict["no_implicit_reexport"] and strict["disallow_any_generics"]
