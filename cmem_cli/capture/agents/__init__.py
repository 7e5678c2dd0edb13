"""Every coding agent cmem supports, one module each, and the registry that reads them: ``cmem install``,
``cmem install --detect``, ``cmem doctor``, ``cmem hook --agent``, ``cmem import``, the help and the tests of
docs/agents.md all ask this registry, so adding an agent is one module here (its :class:`AgentSpec`) plus
the payloads it was written against, recorded under tests/fixtures/agents/.

The hook path loads this package too (to find an agent's payload adapter): a spec module imports only
:mod:`cmem_cli.capture.agent_dirs` at its top and reaches the installers lazily, inside its functions.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_cli.core.errors import InvalidInput

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

# Agent name (what `cmem install`, `cmem hook --agent` and the records' `agent` field say) -> its module
# in this package. The order is the order of help, tables and `cmem install --detect`.
MODULES = {
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "cursor": "cursor",
    "opencode": "opencode",
    "copilot": "copilot",
    "qwen": "qwen",
    "droid": "droid",
    "kilo": "kilo",
    "cline": "cline",
}
NAMES = tuple(MODULES)
SCOPES = ("user", "project")


class Where(NamedTuple):
    """The files an agent's install touches, for one scope."""

    hooks: Path
    mcp: Path


class Importer(NamedTuple):
    """How ``cmem import AGENT`` reads the agent's own session files: the capture module and its importer
    class; ``default_root`` names the module's function giving the folder (None: the files are given)."""

    module: str
    cls: str
    default_root: str | None
    root_help: str  # --root's help, or the PATH argument's when the files are given
    doc: str


# Installing: (where, uninstall=..., register=..., executable=...) -> the changes, MCP included when
# register is true.
Planner = Callable[..., "list[Change]"]


class AgentSpec(NamedTuple):
    """What cmem knows of one agent. (A NamedTuple, not a dataclass: the hook path reads it.)"""

    name: str
    title: str  # as people call it: "Codex CLI"
    program: str  # the command it is started as, looked for on PATH
    user_dir: Callable[[], Path]  # its own folder in the home: the agent is on this machine when it exists
    files: Callable[[str, Path], Where]  # (scope, cwd) -> the hooks file and the MCP file
    # The events cmem installs: event -> (matcher or None, timeout in timeout_unit or None)
    events: Mapping[str, tuple[str | None, int | None]]
    plan: Planner
    adapter: str | None  # the payload adapter's module; None: Claude Code's own payload
    installed: Callable[[Path], list[tuple[str, str]]]  # (event, command) of cmem's entries in a hooks file
    mcp_registered: Callable[[Path], bool]  # cmem's MCP server is in that file
    reference: str  # the client version or document the support was written against (docs/agents.md)
    briefing: str  # how the agent takes the session-start briefing ("" when it takes none)
    timeout_unit: str = "s"
    importer: Importer | None = None
    instructions: Callable[[str, Path], Path] | None = None  # (scope, cwd) -> the agent's instructions file
    # More checks of what is installed (a trust the agent asks for...): (where, commands) -> problems
    checks: Callable[[Where, list[tuple[str, str]]], list[str]] | None = None
    names_agent: bool = True  # hook commands say `--agent NAME`
    project_note: str | None = None  # what the person must do once after a project-scope install

    @property
    def event_names(self) -> set[str]:
        return set(self.events)


def spec(name: str) -> AgentSpec:
    """The spec of agent ``name``; an unknown name is a one-line error listing the known ones."""
    module = MODULES.get(name)
    if module is None:
        raise InvalidInput(f"unknown agent {name!r} (expected one of: {', '.join(NAMES)})")
    found: AgentSpec = importlib.import_module(f"{__name__}.{module}").SPEC
    return found


def specs() -> list[AgentSpec]:
    """Every agent's spec, in the registry's order."""
    return [spec(name) for name in NAMES]


def listed(names: tuple[str, ...] = NAMES, last: str = "or") -> str:
    """``a, b, c or d``: the agents as help text names them."""
    return f"{', '.join(names[:-1])} {last} {names[-1]}" if len(names) > 1 else names[0]


def json_hooks(path: Path) -> list[tuple[str, str]]:
    """(event, command) of cmem's entries in a hooks file of Claude Code's layout (``{event: [{"hooks":
    [{"command"}]}]}``) or Cursor's (``{event: [{"command"}]}``)."""
    from cmem_cli.capture.install_files import is_cmem_command

    hooks = read_json(path).get("hooks")
    found = []
    for event, entries in hooks.items() if isinstance(hooks, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            inner = entry.get("hooks") if isinstance(entry, dict) and "hooks" in entry else [entry]
            for hook in inner if isinstance(inner, list) else []:
                if isinstance(hook, dict) and is_cmem_command(hook.get("command")):
                    found.append((event, hook["command"]))
    return found


def read_json(path: Path) -> dict[str, Any]:
    """A JSON config file's object; {} when it is missing, unreadable or not an object."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def json_server(key: str = "mcpServers") -> Callable[[Path], bool]:
    """A check that cmem's MCP server is under ``key`` of a JSON config file."""

    def registered(path: Path) -> bool:
        servers = read_json(path).get(key)
        return isinstance(servers, dict) and "cmem" in servers

    return registered
