"""Kilo Code (its CLI, ``kilo``): an opencode fork that kept opencode's plugin hooks (``chat.message``,
``tool.execute.after`` with ``tool``, ``sessionID``, ``callID``, ``args``; the bus's ``session.*`` events),
its tools (``bash``, ``edit``, ``read``...) and its plugin folders, under its own names: ``plugins/`` in
``$XDG_CONFIG_HOME/kilo`` (``~/.config``) and in a project's ``.kilo/``, MCP servers under ``mcp`` in
``kilo.json``. cmem installs opencode's plugin with the agent named ``kilo``, and the payloads go through
opencode's adapter. Read in the JavaScript bundled in @kilocode/cli-linux-x64 7.7.9 (npm; @kilocode/cli
7.8.1 installs it): its config directories (``.kilo``, ``.kilocode``, ``kilo.json``) and plugin triggers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture.agents import AgentSpec, Where, json_server

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

AGENT = "kilo"
EVENTS: dict[str, tuple[str | None, int | None]] = {"plugin": (None, None)}
MARK = "// cmem: added by `cmem install kilo`; `cmem install kilo --uninstall` removes this file"


def kilo_dir() -> Path:
    """Kilo Code's configuration folder: ``$XDG_CONFIG_HOME/kilo``, else ``~/.config/kilo``."""
    value = os.environ.get("XDG_CONFIG_HOME")
    return (Path(value).expanduser() if value else Path.home() / ".config") / "kilo"


def files(scope: str, cwd: Path) -> Where:
    if scope == "user":
        return Where(kilo_dir() / "plugins" / "cmem.js", kilo_dir() / "kilo.json")
    return Where(cwd / ".kilo" / "plugins" / "cmem.js", cwd / "kilo.json")


def instructions(scope: str, cwd: Path) -> Path:
    """Kilo Code's AGENTS.md: in its configuration folder, or the project's."""
    return kilo_dir() / "AGENTS.md" if scope == "user" else cwd / "AGENTS.md"


def plugin_source(argv: list[str]) -> str:
    """opencode's plugin, sending its events as ``--agent kilo``."""
    from cmem_cli.capture.opencode_plugin import MARK as OPENCODE_MARK
    from cmem_cli.capture.opencode_plugin import plugin_source as opencode_source

    source = opencode_source(argv).replace(OPENCODE_MARK, MARK)
    return source.replace('"--agent", "opencode"', '"--agent", "kilo"')


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import plan_plugin
    from cmem_cli.capture.install_mcp import server_argv

    options.pop("scope", None)
    return plan_plugin(where, plugin_source(server_argv(options.get("executable"))[:-1]), MARK, **options)


def installed(path: Path) -> list[tuple[str, str]]:
    from cmem_cli.capture.agents.opencode import installed as opencode_installed

    return opencode_installed(path)


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    from cmem_cli.capture.hooks.adapters import opencode
    from cmem_cli.capture.hooks.payload import AGENT_KEY

    shaped = opencode.to_claude(data, event)
    shaped[AGENT_KEY] = AGENT
    return shaped


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    from cmem_cli.capture.hooks.adapters import opencode

    return opencode.reply(event, answer)


SPEC = AgentSpec(
    name=AGENT,
    instructions=instructions,
    title="Kilo Code",
    program="kilo",
    user_dir=kilo_dir,
    files=files,
    events=EVENTS,
    timeout_unit="",
    plan=plan,
    adapter=__name__,
    installed=installed,
    mcp_registered=json_server("mcp"),
    reference="@kilocode/cli 7.8.1 (npm; the JavaScript in @kilocode/cli-linux-x64 7.7.9)",
    briefing="",
    names_agent=False,
)
