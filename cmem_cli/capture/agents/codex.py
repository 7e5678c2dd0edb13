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


def untrusted(where: Where, commands: list[tuple[str, str]]) -> list[str]:
    """cmem's Codex hooks that Codex will not run: no ``trusted_hash`` for them in the user's config.toml, or
    one for an older command (Codex skips an untrusted hook silently in ``codex exec``), or a project Codex
    does not trust (it then reads none of the repository's .codex/)."""
    from cmem_cli.capture import toml_block
    from cmem_cli.capture.agent_dirs import codex_dir
    from cmem_cli.capture.install_agents import codex_trust
    from cmem_cli.core.errors import CmemError

    hooks_file = where.hooks
    try:
        text = hooks_file.read_text(encoding="utf-8")
    except OSError:
        return []
    wanted = codex_trust(hooks_file, text)
    if not wanted:
        return []
    config = codex_dir() / "config.toml"
    try:
        data = toml_block.parse(config, config.read_text(encoding="utf-8"))
    except (OSError, CmemError):
        data = {}
    hooks = data.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    state = state if isinstance(state, dict) else {}
    project = hooks_file.parent.parent
    projects = data.get("projects")
    trusted_dirs = {
        Path(path) for path, entry in (projects.items() if isinstance(projects, dict) else [])
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted"
    }  # fmt: skip
    if hooks_file.parent != codex_dir() and not ({project, *project.parents} & trusted_dirs):
        return ["untrusted: Codex reads this repository's .codex/ only once you trust the project in Codex"]
    unknown = [key for key in wanted if key not in state]
    stale = [k for k in wanted if k in state and (state[k] or {}).get("trusted_hash") != wanted[k]]
    found = []
    if unknown:
        found.append(f"untrusted: Codex does not run {len(unknown)} of cmem's hooks until they are trusted")
    if stale:
        found.append(
            f"stale: {len(stale)} of cmem's hooks changed since Codex trusted them (Codex skips them)"
        )
    return found


def instructions(scope: str, cwd: Path) -> Path:
    """AGENTS.md, which Codex reads in every session: ``$CODEX_HOME/AGENTS.md``, or the repository's."""
    return agent_dirs.codex_dir() / "AGENTS.md" if scope == "user" else cwd / "AGENTS.md"


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
    instructions=instructions,
    checks=untrusted,
    project_note=(
        "codex: Codex runs a repository's hooks only once you trust them: start `codex` here, trust the folder, "
        "and trust cmem's hooks when Codex asks (or in /hooks); `cmem doctor` says when they are untrusted"
    ),
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
