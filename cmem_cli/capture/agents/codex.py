"""OpenAI Codex CLI: Claude Code-shaped hooks in ``hooks.json``, the MCP server as a marked table in
``config.toml``, rollouts under ``$CODEX_HOME/sessions`` for ``cmem import codex``. The payload adapter is
:mod:`cmem_cli.capture.hooks.adapters.codex`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture import agent_dirs
from cmem_cli.capture.agents import AgentSpec, Importer, Where, json_hooks

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

# Event -> (matcher or None, timeout in seconds)
EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    "PostToolUse": (None, 10),
    "Stop": (None, 10),
}


def files(scope: str, cwd: Path) -> Where:
    base = agent_dirs.codex_dir() if scope == "user" else cwd / ".codex"
    return Where(base / "hooks.json", base / "config.toml")


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import plan_codex

    return plan_codex(where, **options)


def mcp_registered(path: Path) -> bool:
    from cmem_cli.capture import toml_block
    from cmem_cli.core.errors import CmemError

    try:
        data = toml_block.parse(path, path.read_text(encoding="utf-8"))
    except (OSError, CmemError):
        return False
    servers = data.get("mcp_servers")
    return isinstance(servers, dict) and "cmem" in servers


SPEC = AgentSpec(
    name="codex",
    title="Codex CLI",
    program="codex",
    user_dir=agent_dirs.codex_dir,
    files=files,
    events=EVENTS,
    plan=plan,
    adapter="cmem_cli.capture.hooks.adapters.codex",
    installed=json_hooks,
    mcp_registered=mcp_registered,
    reference="developers.openai.com/codex/hooks (2026-05-18), codex-rs/hooks/schema/generated (bde5e18)",
    briefing="SessionStart hookSpecificOutput.additionalContext",
    importer=Importer(
        "codex_rollouts",
        "RolloutImporter",
        "sessions_root",
        "Rollout directory (default: $CODEX_HOME/sessions or ~/.codex/sessions).",
        "Import every Codex CLI session rollout, incrementally (safe to run from cron).",
    ),
)
