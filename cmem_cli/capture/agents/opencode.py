"""opencode: no command hooks; cmem installs a plugin of its own (``plugins/cmem.js``,
:mod:`cmem_cli.capture.opencode_plugin`) that runs ``cmem hook --agent opencode EVENT``, and registers the
MCP server under ``mcp`` of ``opencode.json``. ``cmem import opencode`` reads ``opencode export`` files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture import agent_dirs
from cmem_cli.capture.agents import AgentSpec, Importer, Where, json_server

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

# The plugin is one entry: it forwards session.created, chat.message, tool.execute.after, session.idle and
# session.deleted.
EVENTS: dict[str, tuple[str | None, int | None]] = {"plugin": (None, None)}
PLUGIN_EVENTS = ("session.created", "chat.message", "tool.execute.after", "session.idle", "session.deleted")


def files(scope: str, cwd: Path) -> Where:
    config = agent_dirs.opencode_dir() if scope == "user" else cwd / ".opencode"
    return Where(config / "plugins" / "cmem.js", (config if scope == "user" else cwd) / "opencode.json")


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import plan_opencode

    return plan_opencode(where, **options)


def installed(path: Path) -> list[tuple[str, str]]:
    """The plugin as one ("plugin", command) entry: the cmem it runs, read from its ``const CMEM`` line."""
    import json
    import re
    import shlex

    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    match = re.search(r"^const CMEM = (\[.*\])$", text, re.MULTILINE)
    argv = json.loads(match.group(1)) if match else []
    return [("plugin", shlex.join([*argv, "hook"]))] if argv else [("plugin", "")]


SPEC = AgentSpec(
    name="opencode",
    title="opencode",
    program="opencode",
    user_dir=agent_dirs.opencode_dir,
    files=files,
    events=EVENTS,
    timeout_unit="",
    plan=plan,
    adapter="cmem_cli.capture.hooks.adapters.opencode",
    installed=installed,
    mcp_registered=json_server("mcp"),
    reference="opencode.ai/docs/plugins (V1, 2026), anomalyco/opencode session/message-v2.ts",
    briefing="",
    importer=Importer(
        "opencode_exports",
        "ExportImporter",
        None,
        "Files `opencode export SESSION_ID` wrote (its JSON).",
        "Import opencode sessions from `opencode export` files (opencode's own store is private); a file\n"
        "imported again adds what it gained since.",
    ),
    names_agent=False,
)
