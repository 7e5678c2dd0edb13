"""Cursor (agent hooks, ``hooks.json`` version 1): every event carries ``conversation_id``,
``generation_id``, ``workspace_roots`` and ``hook_event_name`` in camelCase (sessionStart,
beforeSubmitPrompt, afterFileEdit, beforeShellExecution, afterShellExecution, afterMCPExecution, stop,
sessionEnd; afterAgentResponse with the answer's ``text``, the turn summary; postToolUse with ``tool_name``,
``tool_input``, ``tool_output`` for the tools without an event of their own). A file edit (``file_path``,
``edits``) becomes Claude Code's Edit, a shell command (``command``, ``output``, ``cwd``) its Bash, an MCP call (``tool_name``, ``tool_input``
as a JSON string, ``result_json``) an ``mcp__server__tool`` call. sessionStart answers with
``additional_context``; beforeSubmitPrompt, which Cursor waits on, with ``{"continue": true}``. Written
against cursor.com/docs/agent/hooks (see docs/agents.md for the date).
"""

from __future__ import annotations

import json
import re
from typing import Any

from cmem_cli.capture.hooks.adapters import IGNORED, briefing, claude_event, renamed, text

AGENT = "cursor"
EVENTS = {
    "sessionStart": "SessionStart",
    "beforeSubmitPrompt": "UserPromptSubmit",
    "beforeShellExecution": "PreToolUse",
    "beforeMCPExecution": "PreToolUse",
    "beforeReadFile": "PreToolUse",
    "afterFileEdit": "PostToolUse",
    "afterShellExecution": "PostToolUse",
    "afterMCPExecution": "PostToolUse",
    "postToolUse": "PostToolUse",
    "afterAgentResponse": "Stop",
    "stop": "Stop",
    "sessionEnd": "SessionEnd",
}
# postToolUse's tools (Cursor 2.x) -> (Claude Code's tool, argument renames). The shell, file edits and MCP calls
# arrive with their own events (exit status, edits, server): postToolUse is ignored for them.
TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "Read": ("Read", {"target_file": "file_path", "path": "file_path"}),
    "Grep": ("Grep", {}),
    "Glob": ("Glob", {"glob_pattern": "pattern"}),
    "LS": ("LS", {"target_directory": "path"}),
    "Delete": ("Delete", {"target_file": "file_path", "path": "file_path"}),
    "WebSearch": ("WebSearch", {"search_term": "query"}),
    "WebFetch": ("WebFetch", {}),
    "Task": ("Task", {}),
    "TodoWrite": ("TodoWrite", {}),
}
COVERED = frozenset({"Shell", "Edit", "Write", "StrReplace", "MultiEdit", "ApplyPatch"})
_CMEM_SERVER = re.compile(r"(?:^|[\s/\\])cmem(?:_cli)?(?:\.exe)?\b")


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    raw_name = event or text(data, "hook_event_name") or ""
    name = EVENTS.get(raw_name, IGNORED)
    roots = data.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    fields: dict[str, Any] = {
        # one conversation is one session; sessionStart also names it session_id
        "session_id": text(data, "conversation_id", "session_id"),
        "cwd": text(data, "cwd") or root,
        "transcript_path": "",  # Cursor's transcript is not Claude Code's: never read for the answer
    }
    if raw_name == "afterFileEdit":
        edits = (
            [e for e in data["edits"] if isinstance(e, dict)] if isinstance(data.get("edits"), list) else []
        )
        # one edit is Claude Code's Edit, several its MultiEdit
        tool_input = {
            "file_path": data.get("file_path"),
            **(edits[0] if len(edits) == 1 else {"edits": edits}),
        }
        fields.update(tool_name="Edit", tool_input=tool_input, tool_response={})
    elif raw_name == "afterShellExecution":
        response: dict[str, Any] = {"stdout": text(data, "output") or ""}
        for key in ("exit_code", "exitCode"):
            if isinstance(data.get(key), int) and not isinstance(data.get(key), bool):
                response["exit_code"] = data[key]
        fields.update(tool_name="Bash", tool_input={"command": data.get("command")}, tool_response=response)
    elif raw_name == "postToolUse":
        tool = text(data, "tool_name") or ""
        if tool in COVERED or tool.startswith("MCP:"):
            return claude_event(AGENT, data, IGNORED, **fields)  # recorded from its own event
        claude, renames = TOOLS.get(tool, (tool, {}))
        output = data.get("tool_output")
        fields.update(
            tool_name=claude,
            tool_input=renamed(data.get("tool_input"), renames),
            tool_response={"stdout": output if isinstance(output, str) else json.dumps(output)},
        )
    elif raw_name == "afterAgentResponse":
        fields["last_assistant_message"] = text(data, "text")
    elif raw_name == "afterMCPExecution":
        fields.update(
            tool_name=_mcp_name(data),
            tool_input=renamed(data.get("tool_input"), {}),
            tool_response=renamed(data.get("result_json"), {}),
        )
    return claude_event(AGENT, data, name, **fields)


def _mcp_name(data: dict[str, Any]) -> str:
    """``mcp__<server>__<tool>`` as Claude Code names it; cmem's own server (its command is cmem) is
    ``mcp__cmem__…``, which capture never records."""
    tool = text(data, "tool_name") or "tool"
    command = text(data, "command") or ""
    if _CMEM_SERVER.search(command):
        return f"mcp__cmem__{tool}"
    server = text(data, "server_name", "server")
    return f"mcp__{server}__{tool}" if server else tool


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    if event == "SessionStart":
        context = briefing(answer)
        return {"additional_context": context} if context else None
    if event == "UserPromptSubmit":
        return {"continue": True}  # Cursor waits for this answer before it sends the prompt
    return None
