"""bench/ is a package of what is kept (issue 25): every script imports as ``bench.NAME`` without touching
``sys.path`` or the product's defaults, and runs as ``python -m bench.NAME`` from the checkout."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import bench
from bench.retrieval import rrf

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(m.name for m in pkgutil.iter_modules(bench.__path__))


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_script_imports_as_part_of_the_package_and_leaves_the_import_path_alone(name: str) -> None:
    path = list(sys.path)
    importlib.import_module(f"bench.{name}")
    assert sys.path == path
    source = (REPO / "bench" / f"{name}.py").read_text(encoding="utf-8")
    assert "sys.path.insert" not in source and "__kwdefaults__" not in source


def test_a_script_runs_as_a_module_from_the_checkout() -> None:
    result = subprocess.run([sys.executable, "-m", "bench.retrieval", "--help"], capture_output=True, text=True,
                            cwd=REPO, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: retrieval.py")


def test_the_rrf_baseline_counts_ranks_only_and_each_key_once_per_list() -> None:
    lists = {"keyword": [("exact", 9.0), ("v1", 1.0), ("v1", 0.9)], "vector": [("v1", 0.41), ("v2", 0.40)]}
    assert rrf(lists) == ["v1", "exact", "v2"]  # v1: 1/62 + 1/61; exact 1/61; v2 1/62
