"""opencode: it has no command hooks; cmem's plugin (``capture/opencode_plugin.js``, installed as a plain
JavaScript file, no build step) runs ``cmem hook --agent opencode EVENT`` with what opencode hands the
plugin: ``session_id``, ``cwd`` (the plugin's ``directory``), and per event ``prompt`` (chat.message),
``tool``/``args``/``output``/``metadata`` (tool.execute.after). This adapter maps opencode's events and
tools (``bash``, ``edit`` with ``filePath``/``oldString``/``newString``, ``read``, ``write``, ``grep``,
``glob``, ``webfetch``, ``task``, ``patch``...) onto Claude Code's. The plugin waits for one answer: the
briefing of ``session.started``, which it adds to the session's system prompt. Checked against opencode 1.18
driven by its real client (tests/agents_real).
"""

from __future__ import annotations

from typing import Any

from cmem_cli.capture.hooks.adapters import IGNORED, briefing, claude_event, renamed, text

AGENT = "opencode"
EVENTS = {
    "session.created": "SessionStart",
    "session.started": "SessionStart",  # the plugin's first system prompt of a session: it waits for the briefing
    "chat.message": "UserPromptSubmit",
    "tool.execute.before": "PreToolUse",
    "tool.execute.after": "PostToolUse",
    "session.idle": "Stop",
    "session.deleted": "SessionEnd",
}
_PATHS = {
    "filePath": "file_path",
    "oldString": "old_string",
    "newString": "new_string",
    "replaceAll": "replace_all",
}
TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "bash": ("Bash", {}),
    "edit": ("Edit", _PATHS),
    "multiedit": ("MultiEdit", _PATHS),
    "write": ("Write", _PATHS),
    "read": ("Read", _PATHS),
    "grep": ("Grep", {"include": "glob"}),
    "glob": ("Glob", {}),
    "list": ("LS", {}),
    "webfetch": ("WebFetch", {}),
    "websearch": ("WebSearch", {}),
    "task": ("Task", {"subagent_type": "subagent_type"}),
    "todowrite": ("TodoWrite", {}),
    "todoread": ("TodoRead", {}),
    "patch": ("apply_patch", {"patchText": "command"}),
    "apply_patch": ("apply_patch", {"patchText": "command"}),
}


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    name = EVENTS.get(event or text(data, "hook_event_name") or "", IGNORED)
    fields: dict[str, Any] = {"transcript_path": ""}
    if name == "PostToolUse":
        tool = text(data, "tool") or ""
        claude, renames = TOOLS.get(tool, (_mcp(tool), {}))
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        response: dict[str, Any] = {"stdout": text(data, "output") or ""}
        exit_code = metadata.get("exit") if isinstance(metadata, dict) else None
        if isinstance(exit_code, int) and not isinstance(exit_code, bool):
            response["exit_code"] = exit_code
        fields.update(
            tool_name=claude,
            tool_input=renamed(data.get("args"), renames),
            tool_response=response,
            tool_use_id=text(data, "call_id", "callID"),
            error=text(data, "error"),
        )
    return claude_event(AGENT, data, name, **fields)


def _mcp(tool: str) -> str:
    """opencode names an MCP tool ``<server>_<tool>``; cmem's own (``cmem_search``...) must read as
    ``mcp__cmem__…``, which capture never records. Other names are kept."""
    return f"mcp__cmem__{tool.removeprefix('cmem_')}" if tool.startswith("cmem_") else tool


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """The briefing and what prompt recall injects, which the plugin adds to the session's system prompt
    (``experimental.chat.system.transform``), and what file recall injects, which it appends to the tool's
    output; other events are not waited for."""
    context = briefing(answer) if event in ("SessionStart", "UserPromptSubmit", "PostToolUse") else None
    return {"additionalContext": context} if context else None
