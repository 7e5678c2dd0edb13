"""Shared fixtures: an isolated cmem home per test and ways to run the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from cmem_cli.__main__ import main

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CMEM_HOME; XDG and HOME point into tmp so nothing leaks outside the test."""
    cmem_home = tmp_path / "cmem-home"
    monkeypatch.setenv("CMEM_HOME", str(cmem_home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CMEM_EMBED_MODEL", "none")
    for var in (
        "CMEM_PROJECT",
        "CMEM_AGENT",
        "CMEM_SESSION",
        "CMEM_DEBUG",
        "CMEM_CONFIG",
        "CMEM_RERANK_MODEL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return cmem_home


@pytest.fixture
def cli(home: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run ``cmem ARGS`` in-process (fast); stdin text optional."""

    def run(*args: str, input: str | None = None) -> Result:
        if input is not None:
            import io

            stdin = io.TextIOWrapper(io.BytesIO(input.encode("utf-8")), encoding="utf-8")
            old = sys.stdin
            sys.stdin = stdin
        try:
            code = main(list(args))
        finally:
            if input is not None:
                sys.stdin = old
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


@pytest.fixture
def sh(home: Path) -> Callable[..., Result]:
    """Run ``cmem ARGS`` as a real subprocess (``python -m cmem_cli``), as scripts and hooks do."""

    def run(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
        data = input.encode("utf-8") if isinstance(input, str) else input
        proc = subprocess.run(
            [sys.executable, "-m", "cmem_cli", *args],
            input=data,
            capture_output=True,
            env={**os.environ, **(env or {})},
            timeout=120,
        )
        return Result(
            proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
        )

    return run


@pytest.fixture(scope="session")
def minilm_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 converted to GGUF by cmem's own importer, once per test session."""
    from tests.model_fixtures import build_minilm_gguf

    return build_minilm_gguf(tmp_path_factory.mktemp("minilm"))
