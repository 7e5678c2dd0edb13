"""The layer rules of docs/architecture.md, checked by import-linter's contracts in pyproject.toml."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command as c; c()",
]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [*LINT_IMPORTS, "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _copy_tree(dest: Path) -> Path:
    """The packages under their import names (the wheel maps export/ and index/ to cmem_export/cmem_index)."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "cmem_cli", dest / "cmem_cli", ignore=ignore)
    shutil.copytree(REPO / "index", dest / "cmem_index", ignore=ignore)
    shutil.copytree(REPO / "export", dest / "cmem_export", ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def test_the_layer_contracts_hold(tmp_path: Path) -> None:
    result = _lint(_copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


def test_a_store_that_imports_the_index_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    repository = root / "cmem_cli" / "store" / "repository.py"
    repository.write_text(repository.read_text() + "\nimport cmem_index.search  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "cmem_cli.store.repository -> cmem_index.search" in result.stdout


def test_the_index_may_not_import_the_services(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    chunker = root / "cmem_index" / "chunker.py"
    chunker.write_text(chunker.read_text() + "\nimport cmem_cli.services.writes  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "The index and the export import only cmem's kernel BROKEN" in result.stdout


def test_a_cli_command_that_imports_the_store_breaks_the_contracts(tmp_path: Path) -> None:
    """The CLI reads and writes through cmem_cli.api; reaching for the store directly is refused."""
    root = _copy_tree(tmp_path)
    body = root / "cmem_cli" / "cli" / "read_bodies.py"
    body.write_text(body.read_text() + "\nimport cmem_cli.store.repository  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "The CLI, capture, MCP, view and sync front ends never import the store BROKEN" in result.stdout
    assert "cmem_cli.cli.read_bodies -> cmem_cli.store.repository" in result.stdout


def test_a_hook_that_imports_the_store_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    runner = root / "cmem_cli" / "capture" / "hooks" / "runner.py"
    runner.write_text(runner.read_text() + "\nfrom cmem_cli.store import records  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "cmem_cli.capture.hooks.runner -> cmem_cli.store" in result.stdout


def test_a_cli_command_that_calls_a_service_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    body = root / "cmem_cli" / "cli" / "write_bodies.py"
    body.write_text(body.read_text() + "\nfrom cmem_cli.services.writes import Memory as _Service  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "CLI, capture, MCP and view reach the services only through the API BROKEN" in result.stdout
    assert "cmem_cli.cli.write_bodies -> cmem_cli.services.writes" in result.stdout


def test_a_hook_that_calls_a_service_breaks_the_contracts(tmp_path: Path) -> None:
    """Capture (hooks, transcript import) writes through cmem_cli.api, never the write service itself."""
    root = _copy_tree(tmp_path)
    capture = root / "cmem_cli" / "capture" / "hooks" / "capture.py"
    capture.write_text(
        capture.read_text() + "\nfrom cmem_cli.services.writes import Memory as _Service  # noqa\n"
    )
    result = _lint(root)
    assert result.returncode == 1
    assert "CLI, capture, MCP and view reach the services only through the API BROKEN" in result.stdout
    assert "cmem_cli.capture.hooks.capture -> cmem_cli.services.writes" in result.stdout
