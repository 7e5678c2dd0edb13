"""Factory Droid: Claude Code's hook layout and payload (``session_id``, ``transcript_path``, ``cwd``,
``permission_mode``, ``hook_event_name``; ``prompt``; ``tool_name``, ``tool_input``, ``tool_response``), with
tools of its own: ``Execute`` (``command``; its output ends ``[Process exited with code N]``), ``Create``
(``file_path``, ``content``), ``Edit`` (``file_path``, ``old_str``, ``new_str``, ``change_all``; its response
a JSON text), ``ApplyPatch`` (``input``), ``Read``, ``Grep``, ``Glob``, ``LS``, ``FetchUrl``, ``WebSearch``.
A tool call that fails (a command's non-zero exit) fires no PostToolUse, so Droid records no failed commands;
Stop carries no answer text, so the turn summary is the last answer in its session file (``transcript_path``,
``{"type": "message", "message": {"role", "content"}}`` lines). `droid exec` fires no UserPromptSubmit. SessionStart answers as Claude Code's
(``hookSpecificOutput.additionalContext``). Droid 0.225 runs the hooks under ``hooks`` in ``settings.json``
(``~/.factory``, ``.factory``); its documentation's ``hooks.json`` is used where one exists. MCP servers are
in ``mcp.json``. Recorded from @factory/cli-linux-x64 0.225.2 (npm; ``droid exec`` with a custom model
against a scripted model server) and read in the JavaScript bundled in it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture.agents import AgentSpec, Where, json_hooks, json_server

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

AGENT = "droid"
# Event -> (matcher or None, timeout in seconds)
EVENTS: dict[str, tuple[str | None, int | None]] = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    "PostToolUse": ("*", 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
}
HANDLED = frozenset({*EVENTS, "PreToolUse", "PreCompact", "Notification", "SubagentStop"})
_EDIT = {"old_str": "old_string", "new_str": "new_string", "change_all": "replace_all"}
# Droid tool -> (Claude Code tool, argument renames)
TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "Execute": ("Bash", {}),
    "Create": ("Write", {}),
    "Edit": ("Edit", _EDIT),
    "MultiEdit": ("MultiEdit", _EDIT),
    "ApplyPatch": ("apply_patch", {"input": "command"}),
    "Read": ("Read", {}),
    "LS": ("LS", {"directory_path": "path"}),
    "FetchUrl": ("WebFetch", {}),
}
_EXITED = re.compile(r"\[Process exited with code (-?\d+)\]\s*\Z")


def factory_dir() -> Path:
    """Droid's folder: ``~/.factory``."""
    return Path.home() / ".factory"


def files(scope: str, cwd: Path) -> Where:
    base = factory_dir() if scope == "user" else cwd / ".factory"
    hooks = base / "hooks.json"
    # Droid 0.225 runs the hooks in settings.json (a real run ignored hooks.json); a folder that has a
    # hooks.json belongs to a Droid that reads it
    return Where(hooks if hooks.exists() else base / "settings.json", base / "mcp.json")


def instructions(scope: str, cwd: Path) -> Path:
    """Droid's AGENTS.md: ``~/.factory/AGENTS.md``, or the project's."""
    return factory_dir() / "AGENTS.md" if scope == "user" else cwd / "AGENTS.md"


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import plan_claude_layout

    options.pop("scope", None)
    return plan_claude_layout(where, events=EVENTS, agent=AGENT, server={"type": "stdio"}, **options)


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    from cmem_cli.capture.hooks.adapters import IGNORED, claude_event, renamed, text

    name = event or text(data, "hook_event_name") or ""
    name = name if name in HANDLED else IGNORED
    # Droid's session file is not Claude Code's transcript; Stop reads the answer from it, which Stop lacks
    fields: dict[str, Any] = {
        "transcript_path": text(data, "transcript_path") or "" if name == "Stop" else ""
    }
    if name == "PostToolUse":
        tool = text(data, "tool_name") or ""
        claude, renames = TOOLS.get(tool, (tool, {}))
        fields.update(tool_name=claude, tool_input=renamed(data.get("tool_input"), renames))
        if claude == "Bash":
            fields["tool_response"] = shell_output(data.get("tool_response"))
    return claude_event(AGENT, data, name, **fields)


def shell_output(response: Any) -> Any:
    """Execute's text as the Bash builder reads it: the output, and the exit status from its last line."""
    output = response if isinstance(response, str) else None
    if isinstance(response, dict):
        found = next(
            (response[k] for k in ("output", "content", "llmContent") if isinstance(response.get(k), str)),
            None,
        )
        output = found
    if output is None:
        return response
    match = _EXITED.search(output)
    if not match:
        return {"stdout": output}
    return {"stdout": output[: match.start()].rstrip("\n"), "exit_code": int(match.group(1))}


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """Droid reads SessionStart's and PostToolUse's ``hookSpecificOutput.additionalContext`` as Claude Code
    does (the briefing; file recall, in the model's next request, as the real-client harness shows)."""
    return answer if event in ("SessionStart", "PostToolUse") else None


SPEC = AgentSpec(
    name=AGENT,
    instructions=instructions,
    title="Factory Droid",
    program="droid",
    user_dir=factory_dir,
    files=files,
    events=EVENTS,
    plan=plan,
    adapter=__name__,
    installed=json_hooks,
    mcp_registered=json_server(),
    reference="@factory/cli 0.225 (npm; the JavaScript in its droid binary), docs.factory.ai hooks reference",
    briefing="SessionStart hookSpecificOutput.additionalContext",
)
