"""The in-process runner (tests/runner.py) answers as the process would and leaves nothing behind."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from tests.conftest import private_env
from tests.runner import invoke


def test_two_homes_in_a_row_see_only_their_own_memories(tmp_path: Path) -> None:
    first, second = private_env(tmp_path / "a"), private_env(tmp_path / "b")
    assert invoke("add", "--title", "Only in the first home", "--project", "p", env=first).exit_code == 0
    in_second = invoke("search", "--all-projects", "--json", env=second)
    assert "Only in the first home" not in in_second.stdout
    assert invoke("add", "--title", "Only in the second", "--project", "p", env=second).exit_code == 0
    again = invoke("search", "--all-projects", "--json", env=first)
    assert [row["title"] for row in again.json()] == ["Only in the first home"]
    # --home of one call is forgotten by the next
    invoke("--home", str(tmp_path / "c"), "stats", env=first)
    assert [row["title"] for row in invoke("search", "--all-projects", "--json", env=first).json()] == [
        "Only in the first home"
    ]


def test_the_environment_folder_streams_and_signals_are_restored(tmp_path: Path) -> None:
    before = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, sys.argv)
    handlers = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    env = {**private_env(tmp_path), "CMEM_PROJECT": "elsewhere"}
    result = invoke("add", "--json", "-", input='{"title": "From stdin"}', env=env, cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, sys.argv) == before
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    assert "CMEM_PROJECT" not in os.environ or os.environ["CMEM_PROJECT"] == before[0].get("CMEM_PROJECT")


def test_failures_are_one_line_and_the_documented_exit(tmp_path: Path) -> None:
    env = private_env(tmp_path)
    missing = invoke("get", "999", env=env)
    assert missing.exit_code == 3 and missing.stdout == ""
    assert len(missing.stderr.strip().splitlines()) == 1
    usage = invoke("search", "--no-such-option", env=env)
    assert usage.exit_code == 2 and "Traceback" not in usage.stderr
    assert invoke("--version", env=env).stdout.startswith("cmem ")


def test_an_exception_escaping_main_is_the_interpreters_traceback_and_exit_1(
    tmp_path: Path, monkeypatch
) -> None:
    import cmem_cli.__main__ as entry

    def broken(argv: list[str]) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(entry, "main", broken)
    result = invoke("stats", env=private_env(tmp_path))
    assert result.exit_code == 1 and result.stderr.startswith("Traceback (most recent call last):")
    assert result.stderr.endswith("RuntimeError: boom\n")

    def exits(argv: list[str]) -> int:
        raise SystemExit("cmem: gone")

    monkeypatch.setattr(entry, "main", exits)
    assert invoke("stats").returncode == 1 and invoke("stats").stderr == "cmem: gone\n"
