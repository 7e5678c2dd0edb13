"""GitHub Copilot CLI: hook files of its own format (``{"version": 1, "hooks": {EVENT: [{"type": "command",
"bash": ..., "timeoutSec": ...}]}}``) in ``$COPILOT_HOME/hooks/`` (``~/.copilot``) and a repository's
``.github/hooks/``; cmem's is one file it owns, ``cmem.json``. Events named in PascalCase (SessionStart,
UserPromptSubmit, PostToolUse, PostToolUseFailure, Stop, SessionEnd) get the VS Code-compatible payload:
``hook_event_name``, ``session_id``, ``timestamp`` (ISO 8601), ``cwd``; ``prompt``; ``tool_name`` (Claude Code's
names, ``Read``, ``Edit``, ``Bash``, with Copilot's arguments ``path``, ``view_range``, ``old_str``,
``new_str``), ``tool_input``, ``tool_result`` = ``{result_type, text_result_for_llm}`` (a command's ends
``<shellId: N completed with exit code C>``); ``error``; ``transcript_path`` and ``stop_reason`` on Stop,
which carries no answer text. MCP servers are in ``mcp-config.json`` (user) or ``.github/mcp.json``.

Copilot CLI may also run the hooks of a repository's ``.claude/settings.json``, cmem's project-scope Claude
Code hooks among them, with this same payload and no ``--agent``: :func:`is_copilot` tells it from Claude
Code's (which never sends ``timestamp`` or ``tool_result``), so those calls are recorded as ``copilot``. (In a
headless 1.0.102 run in a git repository they did not fire.) Copilot CLI gives the model a top-level
``additionalContext`` from SessionStart (the briefing), UserPromptSubmit and PostToolUse (recall), though its
hooks reference says SessionStart's output is not processed.
Recorded from @github/copilot 1.0.102 (npm), run headless with BYOK against a scripted model server, and
its hooks reference (github/docs 927566b).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture.agents import AgentSpec, Where, json_server, read_json

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

AGENT = "copilot"
# Event -> (matcher or None, timeout in seconds)
EVENTS: dict[str, tuple[str | None, int | None]] = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    "PostToolUse": (None, 10),
    "PostToolUseFailure": (None, 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
}
# Copilot's camelCase event names (its own format) -> Claude Code's
CAMEL = {
    "sessionStart": "SessionStart",
    "userPromptSubmitted": "UserPromptSubmit",
    "preToolUse": "PreToolUse",
    "postToolUse": "PostToolUse",
    "postToolUseFailure": "PostToolUseFailure",
    "agentStop": "Stop",
    "subagentStop": "SubagentStop",
    "sessionEnd": "SessionEnd",
    "preCompact": "PreCompact",
}
HANDLED = frozenset({*EVENTS, "PreToolUse", "PreCompact", "SubagentStop"})
_FILE = {"path": "file_path", "file_text": "content", "old_str": "old_string", "new_str": "new_string"}
# Copilot tool -> (Claude Code tool, argument renames)
TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    # the VS Code-compatible payload names the tools as Claude Code does, with Copilot's arguments
    "Read": ("Read", _FILE),
    "Edit": ("Edit", _FILE),
    "Create": ("Write", _FILE),
    "Write": ("Write", _FILE),
    "bash": ("Bash", {}),
    "powershell": ("Bash", {}),
    "view": ("Read", _FILE),
    "create": ("Write", _FILE),
    "edit": ("Edit", _FILE),
    "glob": ("Glob", {}),
    "grep": ("Grep", {}),
    "web_fetch": ("WebFetch", {}),
    "task": ("Task", {}),
    "ask_user": ("AskUserQuestion", {}),
}
# the shell's last line: "<shellId: 0 completed with exit code 1>" (older releases: "<exited with exit code 1>")
_EXIT = re.compile(r"\n?<(?:shellId: [^>]*? completed with|exited with) exit code (-?\d+)>\s*\Z")


def copilot_home() -> Path:
    """Copilot CLI's folder: ``$COPILOT_HOME``, else ``~/.copilot``."""
    value = os.environ.get("COPILOT_HOME")
    return Path(value).expanduser() if value else Path.home() / ".copilot"


def files(scope: str, cwd: Path) -> Where:
    if scope == "user":
        return Where(copilot_home() / "hooks" / "cmem.json", copilot_home() / "mcp-config.json")
    return Where(cwd / ".github" / "hooks" / "cmem.json", cwd / ".github" / "mcp.json")


def instructions(scope: str, cwd: Path) -> Path:
    """Copilot's custom instructions: ``$COPILOT_HOME/copilot-instructions.md``, or the repository's
    ``.github/copilot-instructions.md``."""
    if scope == "user":
        return copilot_home() / "copilot-instructions.md"
    return cwd / ".github" / "copilot-instructions.md"


MARK = "hook --agent copilot "


def hooks_file(executable: str | None) -> str:
    """cmem's hook file: one command hook per event, calling ``cmem hook --agent copilot EVENT``."""
    from cmem_cli.capture.install_files import dump_json, hook_command

    hooks = {
        event: [{"type": "command", "bash": hook_command(event, executable, AGENT), "timeoutSec": timeout}]
        for event, (_, timeout) in EVENTS.items()
    }
    return dump_json({"version": 1, "hooks": hooks})


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import owned_file, plan_server
    from cmem_cli.capture.install_mcp import server_argv

    uninstall = options["uninstall"]
    new = None if uninstall else hooks_file(options.get("executable"))
    changes = [owned_file(where.hooks, new, MARK, "hooks removed" if uninstall else "hooks installed")]
    if options.get("register"):
        command, *args = server_argv(options.get("executable"))
        entry = {"type": "local", "command": command, "args": args, "tools": ["*"]}
        changes.append(plan_server(where.mcp, entry, uninstall=uninstall))
    return changes


def installed(path: Path) -> list[tuple[str, str]]:
    """(event, command) of the cmem hooks in cmem's hook file."""
    from cmem_cli.capture.install_files import is_cmem_command

    hooks = read_json(path).get("hooks")
    found: list[tuple[str, str]] = []
    for event, entries in hooks.items() if isinstance(hooks, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            command = entry.get("bash") if isinstance(entry, dict) else None
            if isinstance(command, str) and is_cmem_command(command):
                found.append((event, command))
    return found


def is_copilot(data: dict[str, Any], environ: Any = None) -> bool:
    """A payload cmem's Claude Code hook received from Copilot CLI (it runs ``.claude/settings.json``):
    Copilot's ``tool_result``, or its ``timestamp`` without Claude Code's ``permission_mode``, or Copilot's
    project variable in the hook's environment."""
    result = data.get("tool_result")
    if isinstance(result, dict) and ("result_type" in result or "text_result_for_llm" in result):
        return True
    if "permission_mode" in data:
        return False
    if "timestamp" in data:  # Claude Code sends none
        return True
    return bool((environ if environ is not None else os.environ).get("COPILOT_PROJECT_DIR"))


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    from cmem_cli.capture.hooks.adapters import IGNORED, claude_event, renamed, text

    raw_name = event or text(data, "hook_event_name", "hookEventName") or ""
    name = CAMEL.get(raw_name, raw_name)
    name = name if name in HANDLED else IGNORED
    fields: dict[str, Any] = {
        "session_id": text(data, "session_id", "sessionId"),
        "transcript_path": "",  # Copilot's events.jsonl is not Claude Code's transcript
        "prompt": text(data, "prompt"),
        "source": text(data, "source"),
    }
    if name in ("PostToolUse", "PostToolUseFailure"):
        tool = text(data, "tool_name", "toolName") or ""
        claude, renames = TOOLS.get(tool, (tool, {}))
        tool_input = data.get("tool_input", data.get("toolArgs"))
        result = data.get("tool_result", data.get("toolResult"))
        result = result if isinstance(result, dict) else {}
        output = text(result, "text_result_for_llm", "textResultForLlm") or ""
        kind = text(result, "result_type", "resultType") or "success"
        response: dict[str, Any] = {"stdout": output}
        if claude == "Bash":
            match = _EXIT.search(output)
            if match:
                response = {"stdout": output[: match.start()], "exit_code": int(match.group(1))}
        error = text(data, "error") or (output or kind if kind in ("failure", "error") else None)
        fields.update(
            tool_name=claude,
            tool_input=_view_lines(renamed(tool_input, renames))
            if claude == "Read"
            else renamed(tool_input, renames),
            tool_response=response,
            error=error,
        )
    elif name == "Stop":
        fields["last_assistant_message"] = text(data, "last_assistant_message")
    shaped = claude_event(AGENT, data, name, **fields)
    shaped.pop("tool_result", None)
    return shaped


def _view_lines(tool_input: dict[str, Any]) -> dict[str, Any]:
    """``view_range`` [first, last] (1-based, -1: to the end) as Read's ``offset`` and ``limit``."""
    span = tool_input.get("view_range")
    if isinstance(span, list) and len(span) == 2 and all(isinstance(n, int) for n in span) and span[0] >= 1:
        first, last = span
        return {**tool_input, "offset": first, **({"limit": last - first + 1} if last >= first else {})}
    return tool_input


# The events whose ``additionalContext`` Copilot CLI gives the model (changelog: sessionStart 1.0.11,
# postToolUse 1.0.49, userPromptSubmitted 1.0.65): the briefing and recall's answers. A top-level field, as
# its SDK's hook outputs have it (copilot-sdk/types.d.ts): 1.0.102 gave the model none of Claude Code's
# ``hookSpecificOutput`` one, and put the top-level one in the first user message (the briefing) or after
# the prompt (recall), as the real-client harness shows (tests/agents_real/test_copilot.py).
ANSWERED = frozenset({"SessionStart", "UserPromptSubmit", "PostToolUse"})


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """The briefing, or what recall injects on a prompt or after a file tool, as a top-level
    ``additionalContext``; nothing else."""
    from cmem_cli.capture.hooks.adapters import briefing

    context = briefing(answer) if event in ANSWERED else None
    return {"additionalContext": context} if context else None


SPEC = AgentSpec(
    name=AGENT,
    instructions=instructions,
    title="GitHub Copilot CLI",
    program="copilot",
    user_dir=copilot_home,
    files=files,
    events=EVENTS,
    plan=plan,
    adapter=__name__,
    installed=installed,
    mcp_registered=json_server(),
    reference="@github/copilot 1.0.102 (npm), docs.github.com Copilot CLI hooks reference (github/docs 927566b)",
    briefing="SessionStart additionalContext (top level)",
)
