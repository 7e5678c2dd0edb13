"""Gemini CLI: hooks and the MCP server both in ``settings.json`` (timeouts in milliseconds), saved chats
under ``~/.gemini/tmp`` for ``cmem import gemini``. The payload adapter is
:mod:`cmem_cli.capture.hooks.adapters.gemini`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture import agent_dirs
from cmem_cli.capture.agents import AgentSpec, Importer, Where, json_hooks, json_server

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

# Event -> (matcher or None, timeout in milliseconds)
EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 15_000),
    "BeforeAgent": (None, 10_000),
    "AfterTool": ("*", 10_000),
    "AfterAgent": (None, 10_000),
    "SessionEnd": (None, 10_000),
}


def files(scope: str, cwd: Path) -> Where:
    base = agent_dirs.gemini_dir() if scope == "user" else cwd / ".gemini"
    return Where(base / "settings.json", base / "settings.json")


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import plan_gemini

    return plan_gemini(where, events=EVENTS, agent="gemini", **options)


SPEC = AgentSpec(
    name="gemini",
    title="Gemini CLI",
    program="gemini",
    user_dir=agent_dirs.gemini_dir,
    files=files,
    events=EVENTS,
    timeout_unit="ms",
    plan=plan,
    adapter="cmem_cli.capture.hooks.adapters.gemini",
    installed=json_hooks,
    mcp_registered=json_server(),
    reference="google-gemini/gemini-cli 5411f11 (0.56.0-nightly.20260806)",
    briefing="SessionStart hookSpecificOutput.additionalContext",
    importer=Importer(
        "gemini_chats",
        "ChatImporter",
        "chats_root",
        "Gemini CLI's project folders (default: $GEMINI_CLI_HOME/.gemini/tmp or ~/.gemini/tmp).",
        "Import every saved Gemini CLI chat, incrementally (safe to run from cron).",
    ),
)
