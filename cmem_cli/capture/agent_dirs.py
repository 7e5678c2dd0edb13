"""Where each coding agent keeps its own files (its settings, and the sessions `cmem import` reads), found as
the agent itself finds them: one place, so that `cmem install`, `cmem install --detect` and `cmem import`
look in the same folders and honour the same variables."""

from __future__ import annotations

import os
from pathlib import Path


def _env_dir(variable: str, default: Path) -> Path:
    """``$variable`` when set, else ``default``."""
    value = os.environ.get(variable)
    return Path(value).expanduser() if value else default


def claude_dir() -> Path:
    """Claude Code's settings folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return _env_dir("CLAUDE_CONFIG_DIR", Path.home() / ".claude")


def claude_json_dir() -> Path:
    """The folder of Claude Code's ``.claude.json`` (its account state, user MCP servers): the home folder,
    or ``$CLAUDE_CONFIG_DIR``."""
    return _env_dir("CLAUDE_CONFIG_DIR", Path.home())


def codex_dir() -> Path:
    """Codex CLI's folder: ``$CODEX_HOME``, else ``~/.codex``."""
    return _env_dir("CODEX_HOME", Path.home() / ".codex")


def gemini_dir() -> Path:
    """Gemini CLI's folder: ``.gemini`` in ``$GEMINI_CLI_HOME``, else in the home folder."""
    return _env_dir("GEMINI_CLI_HOME", Path.home()) / ".gemini"


def cursor_dir() -> Path:
    """Cursor's folder: ``~/.cursor``."""
    return Path.home() / ".cursor"


def opencode_dir() -> Path:
    """opencode's configuration folder: ``$XDG_CONFIG_HOME/opencode``, else ``~/.config/opencode``."""
    return _env_dir("XDG_CONFIG_HOME", Path.home() / ".config") / "opencode"
