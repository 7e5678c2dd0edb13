"""Reading hooks.log in tests: what a hook had to say, without its timing lines."""

from __future__ import annotations

from pathlib import Path


def hook_log(home: Path) -> str:
    """hooks.log without its `slow` lines: a busy test machine is slow, and that is not what these tests check."""
    log = home / "logs" / "hooks.log"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True) if log.exists() else []
    return "".join(line for line in lines if "Z slow " not in line)
